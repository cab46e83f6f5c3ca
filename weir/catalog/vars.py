"""The one registry of session and system configuration parameters.

Each `VarDef` says what a parameter is, how its text is validated and
normalised, and who may change it (SET for a session, ALTER SYSTEM for the
server-wide default). The adapter's session state, SHOW, SET/RESET, ALTER
SYSTEM and ParameterStatus all read from here; re-exported by builtins.py.
Values travel as canonical text; `VarDef.parse` gives the Python value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weir.errors import SqlState, WeirError

# PostgreSQL's cant_change_runtime_param; SqlState may not list it yet.
CANT_CHANGE_RUNTIME_PARAM = getattr(SqlState, "CANT_CHANGE_RUNTIME_PARAM", "55P02")

_TRUE = {"on", "true", "yes", "1", "t", "y"}
_FALSE = {"off", "false", "no", "0", "f", "n"}
_INT_MAX = 2**31 - 1


def _invalid(name: str, value: str, extra: str = "") -> WeirError:
    msg = f'invalid value for parameter "{name}": "{value}"'
    return WeirError(SqlState.INVALID_PARAMETER_VALUE, msg + (f" ({extra})" if extra else ""),
                     hint=extra[:1].upper() + extra[1:] + "." if extra else None)


_DURATION_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
_DURATION_UNITS = {
    "": 1, "us": 0.001, "ms": 1, "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000,
    "hours": 3_600_000, "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_BYTES_RE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}
_OFFSET_RE = re.compile(r"^[+-]\d{1,2}(:\d{2})?$")


def duration_ms(text: str) -> int:
    """'10s', '100ms', '2 min', '0', a bare integer is milliseconds (as in PostgreSQL)."""
    m = _DURATION_RE.match(text.lower())
    if not m or m.group(2) not in _DURATION_UNITS:
        raise ValueError(text)
    return round(float(m.group(1)) * _DURATION_UNITS[m.group(2)])


def format_duration(ms: int) -> str:
    """PostgreSQL's SHOW form: 0, 150ms, 10s, 2min, 1h, 1d."""
    if ms == 0:
        return "0"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def byte_size(text: str, unit: int = 1) -> int:
    """'1GB', '512 MB', '1024' (`unit` bytes each: 1, or 1024 for PostgreSQL's kB-based
    parameters); units are powers of 1024 like PostgreSQL's."""
    m = _BYTES_RE.match(text)
    if not m or m.group(2).lower() not in _BYTE_UNITS:
        raise ValueError(text)
    return int(m.group(1)) * (_BYTE_UNITS[m.group(2).lower()] if m.group(2) else unit)


def format_bytes(n: int) -> str:
    if n == 0:
        return "0"
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


@dataclass(frozen=True)
class VarDef:
    """A configuration parameter.

    kind: 'text' | 'bool' | 'int' | 'float' | 'duration' | 'bytes' | 'enum' | 'list'
    | 'timezone' | 'datestyle' | 'encoding'. `session`: settable by SET;
    `system`: settable by ALTER SYSTEM (both False = read-only). `report`: sent
    to clients as ParameterStatus, like PostgreSQL's GUC_REPORT parameters.
    """

    name: str
    kind: str
    default: str
    description: str
    session: bool = True
    system: bool = True
    report: bool = False
    choices: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # accepted spelling -> canonical choice
    min: float | None = None
    max: float | None = None
    nullable: bool = False  # '' is a valid value meaning "unset"; parse() gives None
    unit: int = 1  # bytes a bare number means (kind 'bytes'): PostgreSQL's kB for work_mem

    @property
    def read_only(self) -> bool:
        return not (self.session or self.system)

    def normalize(self, value: str) -> str:
        """Validate `value` and return its canonical text, or raise 22023."""
        if self.nullable and not value.strip():
            return ""
        fn = _NORMALIZERS[self.kind]
        return fn(self, value)

    def parse(self, value: str | None = None) -> Any:
        """The Python value of canonical text (default if None): bool, int (ms for
        durations, bytes for sizes), float, list[str] (list), str otherwise;
        None for the empty text of a nullable parameter."""
        text = self.default if value is None else value
        if self.nullable and not text:
            return None
        if self.kind == "bool":
            return text == "on"
        if self.kind == "int":
            return int(text)
        if self.kind == "float":
            return float(text)
        if self.kind == "duration":
            return duration_ms(text)
        if self.kind == "bytes":
            return byte_size(text, self.unit)
        if self.kind == "list":
            return [p for p in (s.strip() for s in text.split(",")) if p]
        return text

    def check_settable(self, scope: str = "session") -> None:
        """Raise 55P02 if SET (scope 'session') or ALTER SYSTEM ('system') may not change it."""
        ok = self.session if scope == "session" else self.system
        if not ok:
            raise WeirError(CANT_CHANGE_RUNTIME_PARAM,
                            f'parameter "{self.name}" cannot be changed')

    def range_text(self) -> str:
        if self.max is None:
            lo = format_duration(int(self.min or 0)) if self.kind == "duration" else _num(self.min)
            return f"at least {lo}"
        if self.kind == "duration":
            lo, hi = format_duration(int(self.min or 0)), format_duration(int(self.max or _INT_MAX))
            return f"{lo} .. {hi}"
        return f"{_num(self.min)} .. {_num(self.max)}"


def _num(x: float | None) -> str:
    return str(int(x)) if x is not None and float(x).is_integer() else str(x)


def _n_text(v: VarDef, value: str) -> str:
    return value


def _n_bool(v: VarDef, value: str) -> str:
    low = value.strip().lower()
    if low in _TRUE:
        out = "on"
    elif low in _FALSE:
        out = "off"
    else:
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'parameter "{v.name}" requires a Boolean value')
    if v.choices and out not in v.choices:
        raise _invalid(v.name, value, "available values: " + ", ".join(v.choices))
    return out


def _n_number(v: VarDef, value: str) -> str:
    try:
        num: float = int(value.strip()) if v.kind == "int" else float(value.strip())
    except ValueError:
        typ = "integer" if v.kind == "int" else "numeric"
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'invalid value for parameter "{v.name}": "{value}"',
                        hint=f"Requires an {typ} value." if typ == "integer"
                        else f"Requires a {typ} value.") from None
    if not math.isfinite(num):
        raise _invalid(v.name, value, f"must be a finite number in {v.range_text()}")
    if (v.min is not None and num < v.min) or (v.max is not None and num > v.max):
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'{value.strip()} is outside the valid range for parameter '
                        f'"{v.name}" ({v.range_text()})')
    return str(num) if v.kind == "int" else format(num, "g")  # PostgreSQL shows reals with %g


def _n_duration(v: VarDef, value: str) -> str:
    try:
        ms = duration_ms(value)
    except ValueError:
        raise _invalid(v.name, value, "valid units are us, ms, s, min, h, d") from None
    lo = v.min if v.min is not None else 0
    if ms < lo or (v.max is not None and ms > v.max):
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'{value.strip()} is outside the valid range for parameter '
                        f'"{v.name}" ({v.range_text()})')
    return format_duration(ms)


def _n_bytes(v: VarDef, value: str) -> str:
    try:
        n = byte_size(value, v.unit)
    except ValueError:
        raise _invalid(v.name, value, "valid units are B, kB, MB, GB, TB") from None
    if (v.min is not None and n < v.min) or (v.max is not None and n > v.max):
        raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                        f'{value.strip()} is outside the valid range for parameter '
                        f'"{v.name}" ({format_bytes(int(v.min or 0))} .. '
                        f'{format_bytes(int(v.max or 0))})')
    return format_bytes(n)


def _n_enum(v: VarDef, value: str) -> str:
    low = " ".join(value.strip().lower().split())
    aliases = dict(v.aliases)
    if low in aliases:
        return aliases[low]
    for c in v.choices:
        if c.lower() == low:
            return c
    raise _invalid(v.name, value, "available values: " + ", ".join(v.choices))


def _n_list(v: VarDef, value: str) -> str:
    parts = [p.strip() for p in value.split(",")]
    out = []
    for p in parts:
        if len(p) >= 2 and p[0] == p[-1] == '"':
            p = p[1:-1].replace('""', '"')
        if not p:
            raise _invalid(v.name, value, "empty element in list")
        out.append(p)
    return ", ".join(out)


def _n_timezone(v: VarDef, value: str) -> str:
    """UTC only, as in Materialize: timestamptz values are read (when they name no zone),
    shown, truncated and cast to dates in UTC, so another zone would be accepted and
    silently ignored."""
    s = value.strip().strip("'")
    if s.lower() in ("utc", "etc/utc", "etc/utc0", "gmt", "etc/gmt", "z", "zulu", "universal", "0"):
        return "UTC"
    m = _OFFSET_RE.match(s)
    if m and not any(ch in "123456789" for ch in s):
        return "UTC"  # +00, -00:00, ...
    raise _invalid(v.name, value, "only UTC is supported: timestamptz values are read and shown in UTC "
                   "(convert with AT TIME ZONE)")


def _n_datestyle(v: VarDef, value: str) -> str:
    parts = {p.strip().upper() for p in value.split(",") if p.strip()}
    if not parts or not parts <= {"ISO", "MDY"}:
        raise _invalid(v.name, value, "available values: ISO, MDY")
    return "ISO, MDY"


def _n_encoding(v: VarDef, value: str) -> str:
    # PostgreSQL ignores everything but letters and digits ('utf-8', "'UTF8'", utf_8)
    if "".join(ch for ch in value.upper() if ch.isalnum()) in ("UTF8", "UNICODE"):
        return "UTF8"
    raise _invalid(v.name, value, "available values: UTF8")


_NORMALIZERS: dict[str, Callable[[VarDef, str], str]] = {
    "text": _n_text, "bool": _n_bool, "int": _n_number, "float": _n_number,
    "duration": _n_duration, "bytes": _n_bytes, "enum": _n_enum, "list": _n_list,
    "timezone": _n_timezone, "datestyle": _n_datestyle, "encoding": _n_encoding,
}

_ISOLATION_ALIASES = (
    ("read uncommitted", "serializable"), ("read committed", "serializable"),
    ("repeatable read", "serializable"),
)
_SEVERITIES = ("debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice",
               "warning", "error")

VARS: tuple[VarDef, ...] = (
    VarDef("application_name", "text", "", "The application name reported in statistics "
           "and logs (set by clients such as psql).", report=True),
    VarDef("client_encoding", "encoding", "UTF8", "The client's character set encoding; "
           "only UTF8 is supported.", report=True),
    VarDef("client_min_messages", "enum", "notice", "The lowest severity of messages sent "
           "to the client.", choices=_SEVERITIES),
    VarDef("cluster", "text", "quickstart", "The current cluster."),
    VarDef("cluster_replica", "text", "", "The cluster replica SELECT queries target "
           "(empty: any replica)."),
    VarDef("database", "text", "materialize", "The current database."),
    VarDef("DateStyle", "datestyle", "ISO, MDY", "The display format for date and time "
           "values; only ISO, MDY is supported.", report=True),
    VarDef("extra_float_digits", "int", "1", "Extra digits displayed for floating-point "
           "values; 1 to 3 all print the shortest exact digits, as in PostgreSQL (weir does not "
           "print fewer: values below 1 are refused).", min=1, max=3),
    VarDef("idle_in_transaction_session_timeout", "duration", "2min", "Terminates any "
           "session idle within an open transaction for longer than this (0 disables).",
           min=0, max=_INT_MAX),
    VarDef("integer_datetimes", "bool", "on", "Whether datetimes are integer based "
           "(always on).", session=False, system=False, report=True),
    VarDef("IntervalStyle", "enum", "postgres", "The display format for interval values.",
           choices=("postgres",), report=True),
    VarDef("is_superuser", "bool", "off", "Whether the current role is a superuser.",
           session=False, system=False, report=True),
    VarDef("max_query_result_size", "bytes", "1GB", "The maximum size in bytes of a single "
           "query's result.", min=1, max=1 << 40),
    VarDef("real_time_recency", "bool", "off", "Whether queries wait for the freshest data "
           "of their sources."),
    VarDef("search_path", "list", "public", "The schema search order for names that are "
           "not schema-qualified."),
    VarDef("server_encoding", "encoding", "UTF8", "The server's character set encoding.",
           session=False, system=False, report=True),
    VarDef("server_version", "text", "15.4", "The PostgreSQL version weir reports to "
           "clients.", session=False, system=False, report=True),
    VarDef("server_version_num", "int", "150004", "The PostgreSQL version as an integer.",
           session=False, system=False),
    VarDef("default_table_access_method", "text", "heap", "PostgreSQL's default table access "
           "method, read only (SQLAlchemy compares pg_am's names with it; weir's tables have none).",
           session=False, system=False),
    VarDef("max_identifier_length", "int", "63", "The longest identifier, in bytes, that "
           "catalog reads show whole (their name columns keep PostgreSQL's 63).",
           session=False, system=False),
    VarDef("session_authorization", "text", "", "The role of the current session.",
           session=False, system=False, report=True),
    VarDef("standard_conforming_strings", "bool", "on", "Whether '...' strings treat "
           "backslashes literally (only on is supported).", choices=("on",), report=True),
    VarDef("statement_timeout", "duration", "0", "Aborts any statement that takes longer "
           "than this (0 disables).", min=0, max=_INT_MAX),
    VarDef("TimeZone", "timezone", "UTC", "The time zone for displaying and interpreting "
           "time stamps; only UTC is supported.", report=True),
    VarDef("transaction_isolation", "enum", "strict serializable", "The transaction "
           "isolation level.", choices=("serializable", "strict serializable"),
           aliases=_ISOLATION_ALIASES),
    VarDef("enable_system_reads_in_process", "bool", "on", "Whether a query that reads only "
           "system relations runs in the coordinator's process (DuckDB over the collections' "
           "contents) instead of as a Spark job on a replica; the answer is the same."),
    VarDef("enable_incremental_global_aggregates", "bool", "off", "Whether a materialized "
           "view of a global aggregate (no GROUP BY) or a SELECT DISTINCT is kept from deltas "
           "by the reduce strategy (off: recomputed). Off by default: such views are mostly "
           "small, and on small inputs an interval of reduce costs several times a recompute's."),
    VarDef("incremental_min_updates", "int", "100000", "A materialized view kept from deltas "
           "(the reduce and join strategies) is recomputed instead while its inputs hold fewer "
           "updates than this and its state is not yet built: on small inputs an interval of "
           "recompute is cheaper (bench/incremental_join.py: equal at 10^5 rows, 3x cheaper kept "
           "from deltas at 10^6). Stored with the view when it is created; 0: always from deltas.",
           min=0, max=2**62),
    VarDef("emit_timestamp_notice", "bool", "off", "Whether to send a notice with the "
           "timestamp chosen for each query."),
    VarDef("max_connections", "int", "5000", "The maximum number of concurrent client "
           "connections.", session=False, min=1, max=1_000_000),
    # Statement history (mz_recent_activity_log): see statement_log.py. Each session
    # samples at its own statement_history_sample_rate (ALTER SYSTEM sets the default
    # new sessions get), capped by statement_history_max_sample_rate.
    VarDef("statement_history_sample_rate", "float", "0.01", "The fraction of this "
           "session's statements recorded in the statement history (0 to 1).", min=0, max=1),
    VarDef("statement_history_max_sample_rate", "float", "0.99", "The largest fraction of "
           "statements any session may record in the statement history.", session=False,
           min=0, max=0.99),
    VarDef("statement_log_random_seed", "int", "", "Seeds statement history sampling so "
           "it is reproducible (empty: a random seed).", session=False, min=0,
           max=2**32 - 1, nullable=True),
    VarDef("statement_log_flush_interval", "duration", "5s", "How often sampled statements "
           "are written to the statement history.", session=False, min=100, max=3_600_000),
    VarDef("statement_log_max_age", "duration", "30d", "How long statements are kept in "
           "the statement history (0: dropped at the next retention pass).", session=False, min=0,
           max=3650 * 86_400_000),
    VarDef("statement_logging_target_data_rate", "int", "", "The most bytes per second "
           "the statement history records (empty, the default, or 0: no limit).",
           session=False, min=0, nullable=True),
    VarDef("max_hold_max_lag", "duration", "1d", "The largest MAX LAG a HOLD may have "
           "(CREATE HOLD): how much history one hold can keep from compaction.", session=False,
           min=1000, max=3650 * 86_400_000),
    VarDef("statement_logging_mode", "enum", "on", "Statement history: on, dry_run "
           "(sample and count but write nothing) or off.", session=False,
           choices=("on", "dry_run", "off"), aliases=(("true", "on"), ("false", "off"))),
    VarDef("enable_replicated_compute_introspection", "bool", "on", "Whether replicas write "
           "their introspection to storage (per-replica sources mz_introspection.<log>_<replica>, "
           "the _persist union views); off: no introspection sources for new replicas, and "
           "replicas keep their logs in memory only.", session=False),
    VarDef("enable_compute_operator_hydration_status_logging", "bool", "on", "Whether replicas "
           "report per plan node hydration (mz_internal.mz_compute_operator_hydration_statuses"
           "[_per_worker]); off: they stop, and their statuses are retracted.", session=False),
)


# PostgreSQL's planner and executor settings. weir has no such planner (Spark plans its
# queries), so these change no plan and no answer; they are accepted, validated as
# PostgreSQL validates them, kept per session and shown, so that scripts and tools that
# tune PostgreSQL's planner run unchanged. Settings that would change an answer or its
# text (bytea_output, lc_numeric, DateStyle, IntervalStyle ...) are not among them.
_NO_PLANNER = " (PostgreSQL's planner setting; weir's queries are planned by Spark, so it changes nothing)."
_PLAN_METHODS = ("async_append", "bitmapscan", "gathermerge", "hashagg", "hashjoin",
                 "incremental_sort", "indexonlyscan", "indexscan", "material", "memoize",
                 "mergejoin", "nestloop", "parallel_append", "parallel_hash",
                 "partition_pruning", "seqscan", "sort", "tidscan")
_KB, _BLOCK = 1024, 8192
PLANNER_VARS: tuple[VarDef, ...] = (
    *(VarDef(f"enable_{m}", "bool", "on", f"Enables the planner's use of {m}" + _NO_PLANNER)
      for m in _PLAN_METHODS),
    *(VarDef(f"enable_partitionwise_{m}", "bool", "off", f"Enables partitionwise {m}" + _NO_PLANNER)
      for m in ("aggregate", "join")),
    VarDef("geqo", "bool", "on", "Enables genetic query optimization" + _NO_PLANNER),
    VarDef("geqo_threshold", "int", "12", "FROM items beyond which GEQO is used" + _NO_PLANNER,
           min=2, max=_INT_MAX),
    VarDef("from_collapse_limit", "int", "8", "FROM-list size beyond which subqueries are not "
           "collapsed" + _NO_PLANNER, min=1, max=_INT_MAX),
    VarDef("join_collapse_limit", "int", "8", "FROM-list size beyond which JOIN constructs are "
           "not flattened" + _NO_PLANNER, min=1, max=_INT_MAX),
    VarDef("jit", "bool", "on", "Allow JIT compilation" + _NO_PLANNER),
    *(VarDef(f"jit_{k}above_cost", "float", d, "Query cost above which JIT is used" + _NO_PLANNER,
             min=-1, max=1.7976931348623157e308)
      for k, d in (("", "100000"), ("inline_", "500000"), ("optimize_", "500000"))),
    *(VarDef(n, "float", d, "The planner's cost estimate" + _NO_PLANNER, min=0, max=1.7976931348623157e308)
      for n, d in (("seq_page_cost", "1"), ("random_page_cost", "4"), ("cpu_tuple_cost", "0.01"),
                   ("cpu_index_tuple_cost", "0.005"), ("cpu_operator_cost", "0.0025"),
                   ("parallel_setup_cost", "1000"), ("parallel_tuple_cost", "0.1"))),
    VarDef("max_parallel_workers_per_gather", "int", "2", "Parallel workers per Gather"
           + _NO_PLANNER, min=0, max=1024),
    VarDef("parallel_leader_participation", "bool", "on", "Whether Gather also runs subplans"
           + _NO_PLANNER),
    VarDef("min_parallel_table_scan_size", "bytes", "8MB", "Table size for a parallel scan"
           + _NO_PLANNER, min=0, max=715827882 * _BLOCK, unit=_BLOCK),
    VarDef("min_parallel_index_scan_size", "bytes", "512kB", "Index size for a parallel scan"
           + _NO_PLANNER, min=0, max=715827882 * _BLOCK, unit=_BLOCK),
    VarDef("effective_cache_size", "bytes", "4GB", "The planner's assumed disk cache size"
           + _NO_PLANNER, min=_BLOCK, max=_INT_MAX * _BLOCK, unit=_BLOCK),
    VarDef("work_mem", "bytes", "4MB", "Memory for each sort or hash before it spills"
           + _NO_PLANNER, min=64 * _KB, max=_INT_MAX * _KB, unit=_KB),
    VarDef("hash_mem_multiplier", "float", "2", "Multiple of work_mem for hash tables"
           + _NO_PLANNER, min=1, max=1000),
    VarDef("default_statistics_target", "int", "100", "Statistics target for ANALYZE"
           + _NO_PLANNER, min=1, max=10000),
    VarDef("constraint_exclusion", "enum", "partition", "Whether the planner uses constraints "
           "to skip scans" + _NO_PLANNER, choices=("partition", "on", "off"),
           aliases=(("true", "on"), ("false", "off"), ("yes", "on"), ("no", "off"), ("1", "on"), ("0", "off"))),
    VarDef("plan_cache_mode", "enum", "auto", "Generic or custom plans for prepared statements"
           + _NO_PLANNER, choices=("auto", "force_generic_plan", "force_custom_plan")),
    VarDef("escape_string_warning", "bool", "on", "Warn about backslash escapes in ordinary "
           "string literals (weir never warns: standard_conforming_strings is always on)."),
)
VARS = VARS + PLANNER_VARS

_BY_NAME: dict[str, VarDef] = {v.name.lower(): v for v in VARS}
# Other names for a parameter (Materialize's spellings among them).
_ALIAS_NAMES = {
    "time zone": "timezone", "transaction isolation level": "transaction_isolation",
    "statement_logging_sample_rate": "statement_history_sample_rate",
    "statement_logging_max_sample_rate": "statement_history_max_sample_rate",
    "statement_logging_default_sample_rate": "statement_history_sample_rate",
}
# Aliases that name only the server-wide value (ALTER SYSTEM and SHOW), not a session's.
_SYSTEM_ALIASES = frozenset({"statement_logging_default_sample_rate"})


def lookup_var(name: str) -> VarDef:
    """The definition for `name` (case-insensitive), or 42704 if there is none."""
    key = name.strip().lower()
    key = _ALIAS_NAMES.get(key, key)
    try:
        return _BY_NAME[key]
    except KeyError:
        raise WeirError(SqlState.UNDEFINED_OBJECT,
                        f'unrecognized configuration parameter "{name}"') from None


def is_system_alias(name: str) -> bool:
    """Whether `name` only ever means the server-wide value (e.g.
    statement_logging_default_sample_rate): SHOW gives the system value, SET refuses it."""
    return name.strip().lower() in _SYSTEM_ALIASES


def settable_var(name: str, scope: str = "session") -> VarDef:
    """The definition for `name` if `scope` ('session' for SET/RESET, 'system' for ALTER
    SYSTEM) may change it; 42704 if unknown, 55P02 if not settable in that scope."""
    v = lookup_var(name)
    if scope == "session" and is_system_alias(name):
        raise WeirError(CANT_CHANGE_RUNTIME_PARAM, f'parameter "{name.strip().lower()}" '
                        "cannot be changed", hint="Use ALTER SYSTEM to change it.")
    v.check_settable(scope)
    return v


def normalize_var(name: str, value: str, scope: str = "session") -> tuple[VarDef, str]:
    """Check that `scope` ('session' for SET, 'system' for ALTER SYSTEM) may set
    `name` to `value`; returns the definition and the canonical text."""
    v = settable_var(name, scope)
    return v, v.normalize(value)


def parse_var(name: str, text: str | None = None) -> Any:
    """The typed value of `name`'s canonical text (its default if None): float for
    rates, int ms for durations, int or None (unset) for nullable ints, str for enums.
    E.g. parse_var("statement_log_flush_interval", coord.system_var(...)) -> 5000."""
    return lookup_var(name).parse(text)


def default_values() -> dict[str, str]:
    return {v.name: v.default for v in VARS}
