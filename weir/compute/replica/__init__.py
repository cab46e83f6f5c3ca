"""The replica process (Materialize's compute): one SparkSession, the dataflows it
maintains, arrangements, peeks. Run as `python -m weir.compute.replica`; never
imports weir.compute.controller."""
