"""`zync from-kafka`: Kafka topics -> raw Delta tables, exactly once and resumable."""
