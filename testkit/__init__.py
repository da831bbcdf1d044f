"""Scaffolding shared by the tests and the benchmarks: scratch dbt projects compiled from a
test's own YAML (`scratch`), zync's invoices demo as a project of its own with the demo's
expected output (`invoices`), and a `zync run` process with a checked stream of invoice
events (`harness`). Nothing in the product imports it."""
