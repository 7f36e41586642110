"""Each pipeline stage's wall time, and the hardware it ran on, in ``data/timings.json``: written by every stage
command as it ends, read by ``looking-inward timings`` and by the time estimate's reference runs.

The file keeps every run: a run is the stages recorded one after another until a stage comes round again, and
it is *complete* when it holds every stage that a fresh clone's ``dvc repro`` runs. ``stages`` is the latest
time of each stage; ``runs`` lists the runs, so that a quick rerun (every shard reused) does not replace the
time of the whole run before it.
"""

from __future__ import annotations

import json
from pathlib import Path

from reproduce.config import REPO_ROOT
from reproduce.errors import MissingInput
from reproduce.time_estimate import complete_runs

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
    runs = data.setdefault("runs", [])
    if not runs or stage in runs[-1]["stages"]:
        runs.append({"started": entry["finished"], "stages": {}})
    runs[-1]["stages"][stage] = entry
    atomic_write_json(path, data)


def _total(stages: dict) -> float:
    return sum(t["seconds"] for t in stages.values())


def timings_text(path: Path, every_run: bool = False) -> str:
    """The wall time of each stage of the last complete run in ``path`` (else each stage's latest time, said so),
    the hardware it ran on, and the total; ``every_run``: one line per recorded run first."""
    if not path.exists():
        raise MissingInput(f"{path} does not exist yet; it is written by each stage of `dvc repro`")
    data = json.loads(path.read_text())
    complete = complete_runs(data)
    head = []
    if every_run:
        for i, r in enumerate(data.get("runs", []), 1):
            mark = "complete" if r in complete else "partial"
            head.append(f"run {i:<3} started {r['started']}  {len(r['stages']):>2} stages  "
                        f"{_total(r['stages']) / 60:6.1f} min  {mark}")
        head.append("")
    if complete:
        stages = complete[-1]["stages"]
        head.append(f"the last complete run, started {complete[-1]['started']}:")
    else:
        stages = data.get("stages", {})
        head.append("no complete run recorded: each stage's latest time")
    order = ["datasets", "object-level", "meta-untrained", "finetune-self", "object-level-trained", "finetune-cross",
             "meta-trained", "calibration", "behaviour-change", "policy-reports", "analysis", "figures",
             "report"]
    total, lines = 0.0, head
    for name in sorted(stages, key=lambda n: (order.index(n) if n in order else len(order), n)):
        t = stages[name]
        total += t["seconds"]
        peak = f"   peak GPU {t['peak_gpu_gib']:.1f} GiB" if "peak_gpu_gib" in t else ""
        lines.append(f"{name:<20} {t['seconds'] / 60:7.1f} min   {t['finished']}   {t['hardware']}{peak}")
    lines.append(f"{'total':<20} {total / 60:7.1f} min")
    return "\n".join(lines)
