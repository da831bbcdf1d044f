"""The local stack a developer, the demos and the tests start on one machine: what `zync up`
starts and `zync down` stops (the broker, the registry and the catalog; PostgreSQL and Kafka
Connect with Debezium; a standalone Spark cluster with its Thrift Server), the secured
listeners' material, the Kafka Connect REST client, and the Spark driver's class-data archive
that `make setup` builds. zync's jobs never import it: they reach whatever services their
target names."""
