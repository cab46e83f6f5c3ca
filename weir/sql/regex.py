"""PostgreSQL's regular expressions (ARE) on Spark, whose RLIKE and regexp_* use Java's.

The two agree on most syntax but not on defaults: in PostgreSQL `.` matches a newline and
`$` only the end of the string, `\\w` is Unicode-aware, and flags come as a third argument
(which sqlglot's rendering for Spark drops). A pattern written as a literal is rewritten
into the Java pattern that means the same, or refused where Java means something else
(POSIX classes, word-boundary escapes); a pattern computed from data gets the default flags
only."""

from __future__ import annotations

from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import comparisons, infer
from weir.sql import translate as tr
from weir.sql.infer import Types
from weir.sql.translate import spark_template

# Java: UNIX_LINES (only \n ends a line), DOTALL unless newline-sensitive. Classes such as
# \w stay ASCII, as in PostgreSQL under the C locale (the reference server's).
_DEFAULT, _NEWLINE_SENSITIVE = "(?ds)", "(?dm)"
# PostgreSQL escapes Java reads differently: word boundaries \m \M \y \Y, \Z (end of string only)
_UNLIKE_ESCAPES = frozenset("mMyYZ")


# POSIX classes inside brackets as Java's ASCII classes (PostgreSQL's under the C locale)
_POSIX_CLASSES = {name: "\\p{" + java + "}" for name, java in (
    ("alpha", "Alpha"), ("digit", "Digit"), ("alnum", "Alnum"), ("upper", "Upper"), ("lower", "Lower"),
    ("space", "Space"), ("punct", "Punct"), ("xdigit", "XDigit"), ("cntrl", "Cntrl"), ("print", "Print"),
    ("graph", "Graph"), ("blank", "Blank"))}
_POSIX_CLASSES["word"] = "\\w"


def _refuse(what: str) -> WeirError:
    return WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} is not supported")


def _flags(flags: str, function: str) -> tuple[str, bool]:
    """(Java prefix, newline-sensitive) for PostgreSQL's flag letters."""
    case_insensitive, newline = False, False
    for f in flags:
        if f == "i":
            case_insensitive = True
        elif f == "c":
            case_insensitive = False
        elif f in "nm":
            newline = True
        elif f == "s":
            newline = False
        elif f == "g":
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'{function}() does not support the "global" option')
        elif f in "pwxqeb":
            raise _refuse(f'regular expression option "{f}"')
        else:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, f'invalid regular expression option: "{f}"')
    prefix = _NEWLINE_SENSITIVE if newline else _DEFAULT
    return (prefix[:-1] + "i)" if case_insensitive else prefix), newline


def java_literal(pattern: str, newline: bool) -> str:
    """A literal PostgreSQL pattern as Java reads it: `$` outside brackets is the end of
    the string (Java's also matches before a final newline) unless newline-sensitive."""
    out, i, bracket = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _UNLIKE_ESCAPES and not bracket:
                raise _refuse(f"the regular expression escape \\{nxt}")
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if bracket:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2:end] if end > 0 else ""
                if name not in _POSIX_CLASSES:
                    raise WeirError(SqlState.INVALID_REGULAR_EXPRESSION,
                                    "invalid regular expression: invalid character class")
                out.append(_POSIX_CLASSES[name])
                i = end + 2
                continue
            if pattern.startswith("[=", i) or pattern.startswith("[.", i):
                raise _refuse("collating elements ([. .] and [= =]) in regular expressions")
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                bracket = False
            out.append(c)
        elif c == "[":
            bracket = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(c)
        elif c == "$" and not newline:
            out.append("\\z")
        else:
            out.append(c)
        i += 1
    if pattern.startswith("***"):
        raise _refuse("regular expression directors (***)")
    return "".join(out)


def pattern(p: exp.Expression, flags: str = "", function: str = "regexp_like") -> exp.Expression:
    """The Spark pattern for a PostgreSQL pattern with these flags."""
    prefix, newline = _flags(flags, function)
    if isinstance(p, exp.Literal) and p.is_string:
        return exp.Literal.string(prefix + java_literal(p.this, newline))
    if isinstance(p, exp.Null):
        return p
    # Java's $ also matches before a final newline, and no flag changes that: a pattern
    # only known at run time cannot be rewritten, so it is refused rather than misread
    raise _refuse("a regular expression that is not a constant")


def _flag_text(node: exp.Expression) -> str:
    flag = node.args.get("flag")
    if flag is None:
        return ""
    if not (isinstance(flag, exp.Literal) and flag.is_string):
        raise _refuse("regular expression flags that are not a constant")
    return flag.this


def match(node: exp.Expression, types: Types) -> exp.Expression:
    """`~`, `~*`, regexp_like(s, p[, flags]) as Spark's RLIKE with a Java pattern."""
    flags = ("i" if isinstance(node, exp.RegexpILike) else "") + _flag_text(node)
    java = pattern(node.expression, flags, "regexp_like")
    return exp.RegexpLike(this=node.this, expression=java)


def has_group(p: str) -> bool:
    """Whether a pattern has a capturing parenthesis (not `(?...)`, not escaped or bracketed)."""
    i, bracket = 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if bracket:
            bracket = c != "]"
        elif c == "[":
            bracket = True
        elif c == "(" and not p.startswith("(?", i):
            return True
        i += 1
    return False


def substring(node: exp.Expression) -> exp.Expression:
    """substring(s FROM pattern): the part of s the pattern's first parenthesised group
    matches (the whole match without one), NULL when it does not match (Spark's
    regexp_extract gives '')."""
    p = node.args["start"]
    if not (isinstance(p, exp.Literal) and p.is_string):
        raise _refuse("substring(text FROM pattern) with a pattern that is not a constant")
    java = pattern(p, "", "substring")
    group = 1 if has_group(p.this) else 0
    return spark_template(f"CASE WHEN {{s}} RLIKE {{p}} THEN regexp_extract({{s}}, {{p}}, {group}) END",
                          s=node.this, p=java)


def match_any(node: exp.Expression, types: Types) -> exp.Expression:
    """`~` and friends, also with ANY / ALL (ARRAY[constant patterns]): one match per
    pattern, OR-ed or AND-ed (which answers NULL where ANY / ALL do)."""
    right = comparisons.quantifier(node.expression)
    if right is None:
        return match(node, types)
    array = right.this.this if isinstance(right.this, exp.Paren) else right.this
    if not isinstance(array, exp.Array):
        raise _refuse("a regular expression match with ANY / ALL of an array that is not an ARRAY[...] of constants")
    each = []
    for element in array.expressions:
        one = node.copy()
        one.set("expression", element.copy())
        each.append(exp.Paren(this=match(one, types)))
    if not each:
        return exp.Boolean(this=isinstance(right, exp.All))
    combined = each[0]
    for e in each[1:]:
        combined = (exp.And if isinstance(right, exp.All) else exp.Or)(this=combined, expression=e)
    return exp.Paren(this=combined)


def substring_any(node: exp.Expression, types: Types) -> exp.Expression:
    """substring(s FROM pattern) when the second argument is text; else the positional one."""
    start = node.args.get("start")
    t = types.of(start) if start is not None else None
    if start is not None and node.args.get("length") is None and (
            isinstance(start, exp.Literal) and start.is_string or infer.is_text(t)):
        return substring(node)
    return tr.substring(node, types)


HANDLERS = {exp.RegexpLike: match_any, exp.RegexpILike: match_any, exp.Substring: substring_any}
