"""``looking-inward models``: which model specs can be used offline on this machine, before a stage needs them."""

from __future__ import annotations

from reproduce.lm.models import EMBEDDED, ModelError, load, resolve


def check_specs(specs: list[str], load_weights: bool = False, report=print) -> None:
    """``looking-inward models``: resolve each spec (default: the embedded models), and with ``load_weights`` load
    it, reporting one line each; raise :class:`ModelError` naming every spec that cannot be used offline."""
    import time


    specs = specs or list(EMBEDDED)
    failed = []
    for spec in specs:
        try:
            ref = resolve(spec)
            line = f"{ref.name:<16} {ref.kind:<9} {ref.path}"
            if load_weights:
                t = time.time()
                lm = load(ref)
                line += f"  [{lm.format.kind} format, loaded in {time.time() - t:.1f}s]"
            report(line)
        except ModelError as exc:
            report(f"{spec}: {exc}")
            failed.append(spec)
    if failed:
        raise ModelError(f"{len(failed)} of {len(specs)} model specs cannot be used offline: {', '.join(failed)}")
