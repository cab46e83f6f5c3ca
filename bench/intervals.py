"""Rough cost of interval representations on Spark: long micros (today), struct<months,days,micros>,
struct led by a span key. Rows: N; queries: sum, group by equality (span), order by."""
import sys
import time

from pyspark.sql import SparkSession

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
base = spark.range(N).selectExpr("id", "CAST(id % 13 AS INT) AS m", "CAST(id % 40 AS INT) AS d", "(id % 86400) * 1000000 AS us")
reps = {
    "long_micros": base.selectExpr("id", "((m * 30 + d) * 86400000000 + us) AS v"),
    "struct_mdu": base.selectExpr("id", "named_struct('months', m, 'days', d, 'micros', us) AS v"),
    "struct_span_first": base.selectExpr("id", "named_struct('span', (CAST(m AS BIGINT) * 30 + d) * 86400000000 + us, "
                                         "'months', m, 'days', d, 'micros', us) AS v"),
}
queries = {
    "long_micros": {"sum": "SELECT sum(CAST(v AS DECIMAL(38,0))) FROM t", "group": "SELECT count(*) FROM (SELECT v, count(*) FROM t GROUP BY v)",
                    "order": "SELECT max(v) FROM (SELECT v FROM t ORDER BY v LIMIT 10)"},
    "struct_mdu": {"sum": "SELECT sum(v.months), sum(v.days), sum(v.micros) FROM t",
                   "group": "SELECT count(*) FROM (SELECT (CAST(v.months AS BIGINT) * 30 + v.days) * 86400000000 + v.micros AS k, "
                            "first(v) FROM t GROUP BY k)",
                   "order": "SELECT max(k) FROM (SELECT (CAST(v.months AS BIGINT) * 30 + v.days) * 86400000000 + v.micros AS k FROM t ORDER BY k LIMIT 10)"},
    "struct_span_first": {"sum": "SELECT sum(v.months), sum(v.days), sum(v.micros) FROM t",
                          "group": "SELECT count(*) FROM (SELECT v.span, first(v) FROM t GROUP BY v.span)",
                          "order": "SELECT max(v.span) FROM (SELECT v FROM t ORDER BY v LIMIT 10)"},
}
for name, df in reps.items():
    df.cache().count()
    df.createOrReplaceTempView("t")
    for qn, q in queries[name].items():
        spark.sql(q).collect()
        t = time.time()
        for _ in range(3):
            spark.sql(q).collect()
        print(f"{name:18} {qn:6} {(time.time() - t) / 3 * 1000:8.0f} ms", flush=True)
    df.unpersist()
