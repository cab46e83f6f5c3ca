"""PostgreSQL text and binary wire encodings for every type in `weir.types`.

Values follow the Python value domain documented in `weir.types`. Formats,
error SQLSTATEs and messages match PostgreSQL 15 with DateStyle 'ISO, MDY',
IntervalStyle 'postgres', TimeZone 'UTC' and extra_float_digits=1.

    encode_text(value, t) -> bytes      # output function (value is not None)
    encode_binary(value, t) -> bytes    # send function
    decode_text(data, t) -> value       # input function, applies typmods
    decode_binary(data, t) -> value     # receive function
    copy_text_row(values, types) -> bytes
    coerce(value, t) -> value           # assignment of a Python/literal value to a column

Per-type work lives in dispatch tables keyed by type OID; arrays (any
`t.element`) are handled generically. Date/time, numeric/float and json
details live in `weir.codec.datetime`, `weir.codec.numeric`, `weir.codec.json`,
arrays in `weir.codec.array` (one module per type family, as psycopg 3's `types/`); the
text format in `weir.codec.text_format`, the binary one in `weir.codec.binary_format`,
coerce in `weir.codec.assignment`. This package re-exports their public functions.
"""

from weir.codec.assignment import coerce
from weir.codec.binary_format import decode_binary, encode_binary
from weir.codec.text_format import copy_text_row, decode_text, encode_text

__all__ = ["coerce", "copy_text_row", "decode_binary", "decode_text", "encode_binary",
           "encode_text"]
