"""`zync to-kafka`: an output table's out rows -> their Kafka topic, offsets aligned."""
