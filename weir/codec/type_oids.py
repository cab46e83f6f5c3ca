"""The OIDs of the types the codec's dispatch tables (weir.codec.text_format,
binary_format, assignment) are keyed by."""

BOOL, INT2, INT4, INT8, OID, MZ_TS = 16, 21, 23, 20, 26, 16552
FLOAT4, FLOAT8, NUMERIC = 700, 701, 1700
TEXT, VARCHAR, BPCHAR, NAME, UNKNOWN, JSON, JSONB = 25, 1043, 1042, 19, 705, 114, 3802
DATE, TIMESTAMP, TIMESTAMPTZ, INTERVAL, UUID, BYTEA = 1082, 1114, 1184, 1186, 2950, 17
INT2VECTOR, OIDVECTOR = 22, 30  # arrays whose text form is '1 2' (the system catalogs')
