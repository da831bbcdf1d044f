"""`zync run`: the warm engine that keeps outputs and mirrors moving (ingest -> dbt -> egress)."""
