"""jsonb_set, jsonb_insert and `#-` (jsonb_delete_path): PostgreSQL 15's setPath,
setPathObject and setPathArray (jsonfuncs.c) over parsed JSON values, step for step.

A path is text[]: keys of objects, integer indexes of arrays (negative from the end).
Where the path meets a scalar before its end, nothing changes; a missing key before the
last step is not created. jsonb_set creates the last key or element (or, without
create_if_missing, only replaces one that exists); jsonb_insert puts the value before
(or after) an array element and refuses to replace an object's key; delete removes it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from weir.errors import SqlState, WeirError

REPLACE, CREATE, INSERT_BEFORE, INSERT_AFTER, DELETE = "replace", "create", "before", "after", "delete"
_CREATES = (CREATE, INSERT_BEFORE, INSERT_AFTER)
_INT_MIN = -(2**31)
_INTEGER = re.compile(r"[ \t\n\r\f\v]*([+-]?[0-9]+)")

Json = Any


def _is_container(v: Json) -> bool:
    return isinstance(v, (dict, list))


def set_path(doc: Json, path: Sequence[str | None], new: Json, op: str) -> Json:
    """The document with `new` set (inserted, deleted) at `path`; `doc` is a container."""
    for i, step in enumerate(path):
        if step is None:
            raise WeirError(SqlState.NULL_VALUE_NOT_ALLOWED, f"path element at position {i + 1} is null")
    return _set(doc, path, 0, new, op)


def _set(v: Json, path: Sequence[str | None], level: int, new: Json, op: str) -> Json:
    if isinstance(v, dict):
        return _set_object(v, path, level, new, op)
    if isinstance(v, list):
        return _set_array(v, path, level, new, op)
    return v  # a scalar inside the path: unchanged


def _set_object(v: dict[str, Json], path: Sequence[str | None], level: int, new: Json, op: str) -> dict[str, Json]:
    last = level == len(path) - 1
    key = path[level] if level < len(path) else None
    out: dict[str, Json] = {}
    if not v and op in _CREATES and last and key is not None:
        out[key] = new
        return out
    done = key is None
    items = list(v.items())
    for i, (k, value) in enumerate(items):
        if not done and k == key:
            if last:
                if op in (INSERT_BEFORE, INSERT_AFTER):
                    raise WeirError(SqlState.INVALID_PARAMETER_VALUE, "cannot replace existing key",
                                    hint="Try using the function jsonb_set to replace key value.")
                if op != DELETE:
                    out[k] = new
                done = True
            else:
                out[k] = _set(value, path, level + 1, new, op)
                done = True
            continue
        if op in _CREATES and not done and last and i == len(items) - 1:
            out[k] = value
            out[key] = new  # type: ignore[index]
            done = True
            continue
        out[k] = value
    return out


def _index(step: str, level: int) -> int:
    """An array step as strtoint reads it: leading blanks, a sign, decimal digits, nothing after."""
    m = _INTEGER.fullmatch(step)
    if m is None or not _INT_MIN <= int(m.group(1)) < 2**31:
        raise WeirError(SqlState.INVALID_TEXT_REPRESENTATION,
                        f'path element at position {level + 1} is not an integer: "{step}"')
    return int(m.group(1))


def _set_array(v: list[Json], path: Sequence[str | None], level: int, new: Json, op: str) -> list[Json]:
    n = len(v)
    last = level == len(path) - 1
    idx = n if level >= len(path) or path[level] is None else _index(path[level], level)  # type: ignore[arg-type]
    if idx < 0:
        idx = _INT_MIN if -idx > n else n + idx
    if idx > 0 and idx > n:
        idx = n
    out: list[Json] = []
    done = False
    if (idx == _INT_MIN or n == 0) and last and op in _CREATES:
        out.append(new)
        done = True
    for i, value in enumerate(v):
        if i == idx and level < len(path):
            if last:
                if op in (INSERT_BEFORE, CREATE):
                    out.append(new)
                if op in (INSERT_AFTER, INSERT_BEFORE):
                    out.append(value)
                if op in (INSERT_AFTER, REPLACE):
                    out.append(new)
                done = True
            else:
                out.append(_set(value, path, level + 1, new, op))
        else:
            out.append(value)
    if op in _CREATES and not done and last:
        out.append(new)
    return out
