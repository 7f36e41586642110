"""Table schemas: the columns, kinds and value rules of every table a stage writes, checked on write and on read.

A stage declares its table next to the code that builds it::

    OBJECT_LEVEL = Schema("object_level", [Col("model", "str", null=False), Col("value", "str"), ...],
                          key=["model", "task", "item_id", "property"])

and writes it with ``atomic_write_parquet(path, df, schema=OBJECT_LEVEL)``; readers pass the same schema to
``read_stage_table``. A table that breaks its schema is never written (a bug in the stage shows up where it
happens, not as a wrong number three stages later), and a table from another version of the package is refused
with the column and the rule it breaks.

Kinds: ``str``, ``int``, ``float`` (any real number), ``bool``, ``list`` (a list or array per row) and ``any``.
``null=False`` forbids missing values; ``values`` lists the allowed ones; ``range`` bounds a number (inclusive);
``key`` columns together identify a row (no duplicates). Columns a schema does not name are refused unless it
says ``extra=True``; ``optional`` columns may be absent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reproduce.errors import DataError

KINDS = ("str", "int", "float", "bool", "list", "any")
_INFERRED = {  # pandas.api.types.infer_dtype(skipna=True) results that each kind accepts
    "str": {"string", "empty"},
    "int": {"integer", "empty"},
    "float": {"floating", "integer", "mixed-integer-float", "decimal", "empty"},
    "bool": {"boolean", "empty"},
}


class SchemaError(DataError):
    """A table that does not have the columns, kinds or values its schema declares."""


def require_columns(df: pd.DataFrame, table: str, columns: dict[str, list[str]], family: str, stage: str) -> None:
    """The first checks of a model's input: ``table`` is one of ``columns`` (a family's tables and the columns
    each model needs) and ``df`` has them all; else a :class:`SchemaError` naming what is missing and the
    ``stage`` that writes the table."""
    if table not in columns:
        raise SchemaError(f"unknown {family} table {table!r}: expected one of {sorted(columns)}")
    missing = [c for c in columns[table] if c not in df.columns]
    if missing:
        raise SchemaError(f"the {family} {table} table lacks the column(s) {', '.join(map(repr, missing))} (it needs "
                          f"{', '.join(columns[table])}): re-run the {stage} stage that writes it, or add the column(s)")


@dataclass(frozen=True)
class Col:
    name: str
    kind: str = "any"
    null: bool = True
    values: tuple | None = None
    range: tuple[float, float] | None = None
    optional: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if self.values is not None:
            object.__setattr__(self, "values", tuple(self.values))


@dataclass(frozen=True)
class Schema:
    name: str
    cols: list[Col]
    key: list[str] = field(default_factory=list)
    extra: bool = False

    @property
    def columns(self) -> list[str]:
        """Every declared column, in order (optional ones included)."""
        return [c.name for c in self.cols]

    @property
    def required(self) -> list[str]:
        return [c.name for c in self.cols if not c.optional]

    def problems(self, df: pd.DataFrame) -> list[str]:
        """What is wrong with ``df`` (empty when it conforms)."""
        out = []
        missing = [c for c in self.required if c not in df.columns]
        if missing:
            out.append(f"missing columns {missing}")
        if not self.extra:
            unknown = [c for c in df.columns if c not in self.columns]
            if unknown:
                out.append(f"undeclared columns {unknown}")
        for col in self.cols:
            if col.name in df.columns:
                out += [f"column {col.name!r}: {p}" for p in _column_problems(df[col.name], col)]
        if self.key and not missing:
            dup = df.duplicated(self.key, keep=False)
            if dup.any():
                first = df.loc[dup, self.key].iloc[0].to_dict()
                out.append(f"{int(dup.sum())} rows share a key {self.key} (e.g. {first})")
        return out

    def check(self, df: pd.DataFrame, where: str = "") -> pd.DataFrame:
        """``df`` itself when it conforms; else a :class:`SchemaError` naming every problem."""
        problems = self.problems(df)
        if problems:
            at = f" ({where})" if where else ""
            raise SchemaError(f"table {self.name!r}{at} breaks its schema: " + "; ".join(problems))
        return df


def _is_null(v) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, float) and math.isnan(v)


def _column_problems(s: pd.Series, col: Col) -> list[str]:
    out = []
    if col.kind == "list":
        nulls = np.array([_is_null(v) if not isinstance(v, (list, tuple, np.ndarray)) else False for v in s],
                         dtype=bool)
        bad = [type(v).__name__ for v, n in zip(s, nulls) if not n and not isinstance(v, (list, tuple, np.ndarray))]
        if bad:
            out.append(f"expected a list per row, found {sorted(set(bad))}")
    else:
        nulls = s.isna().to_numpy(dtype=bool)
        if col.kind != "any":
            present = s[~nulls]
            inferred = ("boolean" if pd.api.types.is_bool_dtype(present.dtype)
                        else pd.api.types.infer_dtype(present, skipna=True))
            ok = inferred in _INFERRED[col.kind]
            if col.kind == "int" and inferred == "floating":  # an integer column with missing values, as floats
                ok = bool(np.all(np.mod(present.to_numpy(dtype=float), 1) == 0))
            if not ok:
                out.append(f"expected {col.kind}, found {inferred} (dtype {s.dtype})")
    if not col.null and nulls.any():
        out.append(f"{int(nulls.sum())} missing values")
    if col.values is not None and not out:
        vals = s[~nulls]
        bad = sorted({str(v) for v in vals if v not in col.values})
        if bad:
            out.append(f"values {bad[:5]} outside {list(col.values)}")
    if col.range is not None and not out:
        lo, hi = col.range
        if col.kind == "list":
            flat = [x for v, n in zip(s, nulls) if not n for x in np.asarray(v, dtype=float).ravel()]
            vals = np.asarray(flat, dtype=float)
        else:
            vals = s[~nulls].to_numpy(dtype=float)
        eps = 1e-4  # rounding of probabilities summed in float32
        bad = vals[(vals < lo - eps) | (vals > hi + eps)]
        if bad.size:
            out.append(f"{bad.size} values outside [{lo}, {hi}] (e.g. {bad[0]:.6g})")
    return out


def cols(names: Iterable[str], kind: str, **kw) -> list[Col]:
    """Several columns of one kind and rules."""
    return [Col(n, kind, **kw) for n in names]


PROB = (0.0, 1.0)
