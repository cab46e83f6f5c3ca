"""weir's sqlglot dialect: PostgreSQL's, except where sqlglot's reading of PostgreSQL
text loses meaning. sqlglot splits `INTERVAL '.001 second'` into `'001' SECOND` and
keeps only the last field of `INTERVAL '1-2 3:4 5 day'`; weir keeps the literal whole,
as `CAST('...' AS INTERVAL)`, and parses it the PostgreSQL way later."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.helper import seq_get
from sqlglot.tokens import TokenType

from weir.codec import interval as cinterval
from weir.codec import interval_parse
from weir.errors import SqlState, WeirError
from weir.sql import escapes

_LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")

_UNITS = {"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"}
# meta mark of an array index sqlglot did not make 0-based (Weir.Parser._parse_bracket_key_value)
ONE_BASED_INDEX = "weir_one_based_index"


def _mz_logical_timestamp(args: list[exp.Expression]) -> exp.Expression:
    node = exp.Anonymous(this="mz_now", expressions=args)
    node.meta["weir_output_name"] = "mz_logical_timestamp"
    return node


class ToTimestamp(exp.Expression, exp.Func):
    """to_timestamp(text, template): PostgreSQL's template, as written (weir.codec.formatting)."""

    arg_types = {"this": True, "expression": True}
    _sql_names = ["TO_TIMESTAMP"]


class ToDate(exp.Expression, exp.Func):
    """to_date(text, template)."""

    arg_types = {"this": True, "expression": True}
    _sql_names = ["TO_DATE"]


class Weir(Postgres):
    """PostgreSQL as weir reads it."""

    class Parser(Postgres.Parser):
        # to_char keeps its name (and PostgreSQL's format): sqlglot's TimeToStr renders
        # as Spark's date_format, whose patterns mean something else ('HH' is 00-23)
        # mz_logical_timestamp() is Materialize's older name of mz_now()
        # E'...' is an escape string: text (its escapes already read by the tokenizer), not
        # sqlglot's ByteString, which typed casts (E'\\x01'::bytea) would take as raw bytes
        # PostgreSQL has no lambdas: `f(j -> 'a')` is jsonb's -> in an argument, not `j -> 'a'`
        # a lambda of j (sqlglot's reading; `=>` named arguments stay)
        LAMBDAS = {k: v for k, v in Postgres.Parser.LAMBDAS.items() if k != TokenType.ARROW}
        PRIMARY_PARSERS = {**Postgres.Parser.PRIMARY_PARSERS,
                           TokenType.BYTE_STRING: lambda self, token: self.expression(
                               exp.Literal.string(token.text), token),
                           TokenType.UNICODE_STRING: lambda self, token: self.expression(
                               self._unicode_string(token.text), token)}
        FUNCTIONS = {**Postgres.Parser.FUNCTIONS,
                     "TO_CHAR": lambda args: exp.Anonymous(this="to_char", expressions=args),
                     "MZ_LOGICAL_TIMESTAMP": _mz_logical_timestamp,
                     # timezone(zone, ts) is ts AT TIME ZONE zone; to_timestamp(text, text) and
                     # to_date keep PostgreSQL's template (sqlglot rewrites it as strftime's)
                     "TIMEZONE": lambda args: exp.AtTimeZone(this=args[1], zone=args[0]) if len(args) == 2
                     else exp.Anonymous(this="timezone", expressions=args),
                     "TO_TIMESTAMP": lambda args: exp.UnixToTime(this=args[0]) if len(args) == 1
                     else ToTimestamp(this=args[0], expression=args[1]) if len(args) == 2
                     else exp.Anonymous(this="to_timestamp", expressions=args),
                     "TO_DATE": lambda args: ToDate(this=args[0], expression=args[1]) if len(args) == 2
                     else exp.Anonymous(this="to_date", expressions=args),
                     "DATE_BIN": lambda args: _date_bin(args),  # origin in parentheses (below)
                     # ROW(a, b) is the row constructor (a, b), not a function named row
                     "ROW": lambda args: exp.Tuple(expressions=args)}

        def _unicode_string(self, body: str) -> exp.Literal:
            """U&'...' [UESCAPE 'c'] as the text it stands for (sqlglot decodes only decimal
            digits after the escape character and not the six-digit +XXXXXX form)."""
            given = self._parse_string() if self._match_text_seq("UESCAPE") else None
            escape = escapes.unicode_escape_character(None if given is None else given.name)
            return exp.Literal.string(escapes.check_unicode_string(body, escape))

        def _parse_function_call(self, functions: dict | None = None, anonymous: bool = False,  # type: ignore[override]
                                 optional_parens: bool = True, any_token: bool = False) -> exp.Expression | None:
            """A call keeps the name it was written with: PostgreSQL names a result column
            after it (`substr(...)` is column substr, though sqlglot reads it as SUBSTRING)."""
            token, following = self._curr, self._next
            node = super()._parse_function_call(functions, anonymous, optional_parens, any_token)
            if (node is not None and token is not None and following is not None
                    and following.token_type == TokenType.L_PAREN and "weir_output_name" not in node.meta
                    and token.text.lower() not in ("cast", "try_cast")):  # named after what it casts
                node.meta["weir_output_name"] = _written_name(token.text.lower(), node)
            return node

        def _parse_alias(self, this: exp.Expression | None,  # type: ignore[override]
                         explicit: bool = False) -> exp.Expression | None:
            """After AS, PostgreSQL takes any keyword as a column label (`AS select`, as
            Metabase's table privileges query writes); sqlglot takes all but the reserved."""
            following = self._next
            if (self._curr is not None and self._curr.token_type == TokenType.ALIAS and following is not None
                    and following.token_type in self.RESERVED_TOKENS and _LABEL.match(following.text)):
                self._advance(2)
                return self.expression(exp.Alias(this=this, alias=exp.to_identifier(following.text.lower(), quoted=True)))
            return super()._parse_alias(this, explicit)

        def _parse_bracket_key_value(self, is_map: bool = False) -> exp.Expression | None:  # type: ignore[override]
            """An index as written: sqlglot makes `a[i]` 0-based only where it can type `i`
            as an integer (a literal, a cast); the mark tells weir's subscript an index
            sqlglot left 1-based (`a[s.r]`)."""
            node = super()._parse_bracket_key_value(is_map)
            if node is not None:
                node.meta[ONE_BASED_INDEX] = True
            return node

        def _parse_types(self, check_func: bool = False, schema: bool = False,  # type: ignore[override]
                         allow_identifiers: bool = True, with_collation: bool = False) -> exp.Expression | None:
            """`oid[]`, `regtype[]`: an array of an object-identifier type (sqlglot reads the
            element as ObjectIdentifier and leaves the brackets unparsed)."""
            this = super()._parse_types(check_func=check_func, schema=schema, allow_identifiers=allow_identifiers,
                                        with_collation=with_collation)
            while (isinstance(this, exp.ObjectIdentifier) or _oid_array(this)) \
                    and self._match_pair(TokenType.L_BRACKET, TokenType.R_BRACKET):
                this = exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[this], nested=True)
            return this

        def parse(self, raw_tokens: list, sql: str | None = None) -> list[exp.Expression | None]:  # type: ignore[override]
            return [e.transform(_literal_typmod, copy=False) if e is not None else e
                    for e in super().parse(raw_tokens, sql)]

        def _interval_fields(self) -> tuple[frozenset[str] | None, int | None]:
            """`YEAR`, `DAY TO HOUR`, `SECOND(3)`, `MINUTE TO SECOND(2)` after an interval
            literal: the typmod's fields and seconds' precision."""
            if self._curr is None or self._curr.text.upper() not in _UNITS:
                return None, None
            first = self._curr.text.upper()
            self._advance()
            last, precision = first, None
            if first == "SECOND":
                precision = self._seconds_precision()
            if self._curr is not None and self._curr.text.upper() == "TO":
                self._advance()
                if self._curr is None or self._curr.text.upper() not in _UNITS:
                    self.raise_error("Expected an interval field after TO")
                last = self._curr.text.upper()
                self._advance()
                if last == "SECOND":
                    precision = self._seconds_precision()
            order = ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"]
            lo, hi = order.index(first), order.index(last)
            if (first, last) not in _RANGES and first != last:
                raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error at or near \"{last}\"")
            return frozenset(f.lower() for f in order[lo:hi + 1]), precision

        def _seconds_precision(self) -> int | None:
            if not self._match(TokenType.L_PAREN):
                return None
            if self._curr is None or not self._curr.text.isdigit():
                self.raise_error("Expected the precision of seconds")
            precision = int(self._curr.text)
            self._advance()
            self._match_r_paren()
            return precision

        def _parse_interval(self, require_interval: bool = True,  # type: ignore[override]
                            parse_function_unit: bool = True) -> exp.Expression | None:
            index = self._index
            if not self._match(TokenType.INTERVAL):
                if require_interval:
                    return None
                return super()._parse_interval(require_interval, parse_function_unit)
            if not self._match(TokenType.STRING, advance=False):
                self._retreat(index)
                return super()._parse_interval(require_interval, parse_function_unit)
            text = self._curr.text
            self._advance()
            fields, precision = self._interval_fields()
            if fields is not None or precision is not None:
                text = _typmod_text(text, fields, precision)
            return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("INTERVAL"))


_RANGES = {("YEAR", "MONTH"), ("DAY", "HOUR"), ("DAY", "MINUTE"), ("DAY", "SECOND"), ("HOUR", "MINUTE"),
           ("HOUR", "SECOND"), ("MINUTE", "SECOND")}
_FIELD_NAMES = {"YEAR": "year", "MONTH": "month", "DAY": "day", "HOUR": "hour", "MINUTE": "minute", "SECOND": "second"}


def _typmod_text(text: str, fields: frozenset[str] | None, precision: int | None) -> str:
    """The literal's value under its typmod, as text that reads back to the same value
    (PostgreSQL's interval_in takes the typmod: a bare number is its last field,
    `INTERVAL '1 2' DAY TO HOUR` is 1 day 2 hours, and lower fields are cut off)."""
    if precision is not None and precision > 6:
        precision = 6  # PostgreSQL warns and keeps 6
    return cinterval.out(interval_parse.parse(text, fields, precision))


def _literal_typmod(node: exp.Expression) -> exp.Expression:
    """`'1.5'::interval year`, `CAST('1 2' AS INTERVAL DAY TO HOUR)`, `'1.25'::interval(1)`:
    a string literal cast to an interval with a typmod is read with it (as
    `INTERVAL '...' YEAR` is); any other value keeps the typmod weir cannot apply, which
    no later step knows as a type."""
    if not (isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string):
        return node
    to = node.to
    fields, precision = None, None
    if isinstance(to.this, exp.Interval):
        unit = to.this.args.get("unit")
        names = [unit.this.name, unit.expression.name] if isinstance(unit, exp.IntervalSpan) else [unit.name]
        order = list(_FIELD_NAMES)
        if any(n.upper() not in _FIELD_NAMES for n in names):
            return node
        lo, hi = order.index(names[0].upper()), order.index(names[-1].upper())
        fields = frozenset(_FIELD_NAMES[f] for f in order[lo:hi + 1])
    elif to.this == exp.DataType.Type.INTERVAL and to.expressions:
        param = to.expressions[0]
        value = param.this if isinstance(param, exp.DataTypeParam) else param
        if not (isinstance(value, exp.Literal) and value.this.isdigit()):
            return node
        precision = int(value.this)
    else:
        return node
    return exp.Cast(this=exp.Literal.string(_typmod_text(node.this.this, fields, precision)),
                    to=exp.DataType.build("INTERVAL"))


def _oid_array(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.DataType) and node.this == exp.DataType.Type.ARRAY \
        and bool(node.expressions) and isinstance(node.expressions[0], exp.ObjectIdentifier)


def _date_bin(args: list) -> exp.Expression:
    """date_bin(stride, source, origin): sqlglot reads the origin as a unit (a column `o`
    becomes the Var `O`); in parentheses it stays an expression, also when a stored view
    definition (`DATE_BIN(s, t, (o))`) is read back with sqlglot's own PostgreSQL dialect."""
    origin = seq_get(args, 2)
    if origin is not None and not isinstance(origin, exp.Paren):
        origin = exp.Paren(this=origin)
    return exp.DateBin(this=seq_get(args, 0), expression=seq_get(args, 1), unit=origin)


def _written_name(name: str, node: exp.Expression) -> str:
    """PostgreSQL's column name for a call written `name(...)`: TRIM is syntax for
    btrim/ltrim/rtrim."""
    if name == "trim" and isinstance(node, exp.Trim):
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(str(node.args.get("position") or "").upper(), "btrim")
    return name
