"""What tests share beyond the session's services: scratch dbt projects (scratch.py)."""
