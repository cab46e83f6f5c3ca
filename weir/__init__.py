"""weir: a streaming SQL database on Apache Spark."""
