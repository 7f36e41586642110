"""Each pipeline stage's wall time, and the hardware it ran on, in ``data/timings.json``: written by every stage
command as it ends, read by ``looking-inward timings`` and by the time estimate's reference runs."""

from __future__ import annotations

import json
from pathlib import Path

from reproduce.config import REPO_ROOT
from reproduce.errors import MissingInput

TIMINGS = REPO_ROOT / "data" / "timings.json"


def record_timing(stage: str, seconds: float, path: Path = TIMINGS, processes: int = 1) -> None:
    """Merge one stage's wall time, with the hardware it ran on, into ``path`` (atomically)."""
    from datetime import datetime, timezone

    import torch

    from reproduce.hardware import describe
    from reproduce.io import atomic_write_json

    data = json.loads(path.read_text()) if path.exists() else {}
    entry = {"seconds": round(seconds, 1), "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "hardware": describe("cuda" if torch.cuda.is_available() else "cpu"), "processes": processes}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        entry["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    data.setdefault("stages", {})[stage] = entry
    atomic_write_json(path, data)


def timings_text(path: Path) -> str:
    """The wall time of each stage's last run in ``path``, the hardware it ran on, and the total."""
    if not path.exists():
        raise MissingInput(f"{path} does not exist yet; it is written by each stage of `dvc repro`")
    stages = json.loads(path.read_text()).get("stages", {})
    order = ["datasets", "object-level", "meta-untrained", "finetune-self", "object-level-trained", "finetune-cross",
             "meta-trained", "calibration", "behaviour-change", "analysis", "figures", "report"]
    total, lines = 0.0, []
    for name in sorted(stages, key=lambda n: (order.index(n) if n in order else len(order), n)):
        t = stages[name]
        total += t["seconds"]
        peak = f"   peak GPU {t['peak_gpu_gib']:.1f} GiB" if "peak_gpu_gib" in t else ""
        lines.append(f"{name:<20} {t['seconds'] / 60:7.1f} min   {t['finished']}   {t['hardware']}{peak}")
    lines.append(f"{'total':<20} {total / 60:7.1f} min")
    return "\n".join(lines)
