"""zync on Spark: shared code of the ingest and egress jobs, the compiler and the CLI."""
