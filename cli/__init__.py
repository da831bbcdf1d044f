"""The `zync` command (cli/main.py): the top layer, over zync/ (shared), compiler/, ingest/, egress/ and service/."""
