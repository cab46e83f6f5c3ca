"""What a load generator source is: its kind and options (`LoadGeneratorSpec`), how
`CREATE SOURCE ... FROM LOAD GENERATOR <kind> (<options>)` options are validated
(`parse_options`), and the relations each kind produces (`subsources`).

Options follow Materialize: TICK INTERVAL (default 1s; TPCH changes nothing unless one
is given), AS OF n (the first n ticks are folded into the initial snapshot), UP TO n
(no tick n or later is produced), MAX CARDINALITY (COUNTER only), SCALE FACTOR (TPCH
only, default 0.01). SEED is a weir extension for AUCTION and TPCH (Materialize offers
it only for KEY VALUE); it defaults to 0, so sources are deterministic either way.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from weir.codec import interval as cinterval
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError
from weir.storage.sources import auction, counter, tpch
from weir.storage.sources.common import Column, Relation
from weir.types import INT8

KINDS = ("counter", "auction", "tpch")
# Materialize's generators weir does not implement (yet).
_OTHER_KINDS = {"MARKETING", "DATUMS", "KEY VALUE", "CLOCK"}

DEFAULT_TICK_MS = 1000
DEFAULT_SCALE_FACTOR = 0.01
# The generator is pure Python and the snapshot is built in memory: SF 0.1 is ~600k
# lineitems (about 8 s); beyond that it is too slow and too big to be useful.
MAX_SCALE_FACTOR = 0.1
_MAX_U64 = (1 << 63) - 1

# Every load generator option Materialize knows; which ones each kind takes.
_ALL_OPTIONS = {"TICK INTERVAL", "AS OF", "UP TO", "SCALE FACTOR", "MAX CARDINALITY", "KEYS",
                "SNAPSHOT ROUNDS", "TRANSACTIONAL SNAPSHOT", "VALUE SIZE", "SEED", "PARTITIONS",
                "BATCH SIZE"}
_PERMITTED = {
    "counter": {"TICK INTERVAL", "AS OF", "UP TO", "MAX CARDINALITY"},
    "auction": {"TICK INTERVAL", "AS OF", "UP TO", "SEED"},
    "tpch": {"TICK INTERVAL", "AS OF", "UP TO", "SCALE FACTOR", "SEED"},
}

# The progress relation ("EXPOSE PROGRESS AS <name>"): how many ticks the source's
# shards hold, written in the same group commit as the data. Materialize's column is
# `offset uint8`; weir has no unsigned types.
PROGRESS_COLUMNS: list[Column] = [("offset", INT8, True)]


@dataclass
class LoadGeneratorSpec:
    """A load generator source's definition: what the catalog stores and the runner runs.

    `options` holds validated values under snake_case keys: as_of (int), up_to (int or
    absent), seed (int), max_cardinality (COUNTER, int or absent), scale_factor (TPCH,
    float). `tick_ms` 0 means the source never ticks (TPCH without TICK INTERVAL).
    """

    kind: str
    tick_ms: int = DEFAULT_TICK_MS
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def as_of(self) -> int:
        return int(self.options.get("as_of", 0))

    @property
    def up_to(self) -> int | None:
        v = self.options.get("up_to")
        return None if v is None else int(v)

    @property
    def seed(self) -> int:
        return int(self.options.get("seed", 0))

    @property
    def max_cardinality(self) -> int | None:
        v = self.options.get("max_cardinality")
        return None if v is None else int(v)

    @property
    def scale_factor(self) -> float:
        return float(self.options.get("scale_factor", DEFAULT_SCALE_FACTOR))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadGeneratorSpec:
        return cls(kind=d["kind"], tick_ms=int(d.get("tick_ms", DEFAULT_TICK_MS)),
                   options=dict(d.get("options", {})))


def subsources(spec: LoadGeneratorSpec) -> list[Relation]:
    """The relations a source produces, in Materialize's order: name -> columns.

    COUNTER produces a single relation named "" (`PRIMARY_RELATION`): the source itself.
    """
    kind = normalize_kind(spec.kind)
    rels = {"counter": counter.RELATIONS, "auction": auction.RELATIONS, "tpch": tpch.RELATIONS}[kind]
    return [(name, list(cols)) for name, cols in rels]


def normalize_kind(kind: str) -> str:
    k = " ".join(kind.replace("_", " ").split()).upper()
    if k.lower() in KINDS:
        return k.lower()
    if k in _OTHER_KINDS:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"LOAD GENERATOR {k} not yet supported",
                        hint="Supported load generators: AUCTION, COUNTER, TPCH.")
    raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f"unknown load generator {kind!r}",
                    hint="Supported load generators: AUCTION, COUNTER, TPCH.")


def _bad(message: str, hint: str | None = None) -> WeirError:
    return WeirError(SqlState.INVALID_PARAMETER_VALUE, message, hint=hint)


def _unquote(value: Any) -> str:
    s = str(value).strip()
    if len(s) >= 2 and s[0] == s[-1] == "'":
        s = s[1:-1].replace("''", "'").strip()
    return s


def _parse_u64(name: str, value: Any) -> int:
    s = _unquote(value)
    if not re.fullmatch(r"\+?\d+", s) or int(s) > _MAX_U64:
        raise _bad(f"invalid {name}: expected a non-negative integer, got {s!r}")
    return int(s)


def parse_interval_us(text: Any) -> int:
    """An interval literal as TICK INTERVAL takes it ('1s', '500ms', '1 minute 30 seconds',
    '00:00:01', a bare number of seconds): PostgreSQL's interval input, in microseconds."""
    s = _unquote(text)
    if not s:
        raise _bad("invalid TICK INTERVAL: empty interval")
    try:
        value = cinterval.flattened(interval_parse.parse(s))
    except WeirError:
        raise _bad(f"invalid TICK INTERVAL: {s!r} is not an interval",
                   hint="Use an interval such as '1s', '500ms' or '2 minutes'.") from None
    return value // dt.timedelta(microseconds=1)


def _normalize_option(name: str) -> str:
    return " ".join(str(name).replace("_", " ").split()).upper()


def parse_options(kind: str, options: dict[str, str]) -> LoadGeneratorSpec:
    """Validate `FROM LOAD GENERATOR <kind> (<options>)` into a spec.

    Unknown option names and bad values are 22023; options Materialize has but this
    generator does not take, and generators weir lacks, are 0A000.
    """
    k = normalize_kind(kind)
    seen: dict[str, Any] = {}
    for raw_name, value in options.items():
        name = _normalize_option(raw_name)
        if name in seen:
            raise _bad(f"LOAD GENERATOR option {name} specified more than once")
        if name not in _ALL_OPTIONS:
            raise _bad(f"unrecognized LOAD GENERATOR option {name!r}",
                       hint="Valid options: " + ", ".join(sorted(_PERMITTED[k])) + ".")
        if name not in _PERMITTED[k]:
            raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                            f"{k.upper()} load generators do not support {name} values",
                            hint="Valid options: " + ", ".join(sorted(_PERMITTED[k])) + ".")
        seen[name] = value

    tick_ms = 0 if k == "tpch" else DEFAULT_TICK_MS  # TPCH only changes with a TICK INTERVAL
    if "TICK INTERVAL" in seen:
        us = parse_interval_us(seen["TICK INTERVAL"])
        if us <= 0 and k != "tpch":
            raise _bad("TICK INTERVAL must be greater than zero")
        tick_ms = max(1, math.ceil(us / 1000)) if us > 0 else 0

    opts: dict[str, Any] = {"as_of": 0}
    if "AS OF" in seen:
        opts["as_of"] = _parse_u64("AS OF", seen["AS OF"])
    if "UP TO" in seen:
        opts["up_to"] = _parse_u64("UP TO", seen["UP TO"])
        if opts["up_to"] < opts["as_of"]:
            raise _bad("UP TO cannot be less than AS OF")
    if k != "counter":
        opts["seed"] = _parse_u64("SEED", seen["SEED"]) if "SEED" in seen else 0
    if "MAX CARDINALITY" in seen:
        opts["max_cardinality"] = _parse_u64("MAX CARDINALITY", seen["MAX CARDINALITY"])
    if k == "tpch":
        sf = DEFAULT_SCALE_FACTOR
        if "SCALE FACTOR" in seen:
            text = _unquote(seen["SCALE FACTOR"])
            try:
                sf = float(text)
            except ValueError:
                raise _bad(f"invalid SCALE FACTOR: expected a number, got {text!r}") from None
            if not math.isfinite(sf) or sf < 0:
                raise _bad(f"unsupported scale factor {text}")
            if sf > MAX_SCALE_FACTOR:
                raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                                f"SCALE FACTOR {text} not yet supported",
                                hint=f"weir generates TPCH data up to SCALE FACTOR {MAX_SCALE_FACTOR}.")
        opts["scale_factor"] = sf
    return LoadGeneratorSpec(kind=k, tick_ms=tick_ms, options=opts)
