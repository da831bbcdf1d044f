"""Where `zync run` runs its dbt stage (`--dbt`).

in-cycle: between ingest and egress, one after another; a cycle lasts as long as its models run.
beside: on a thread of its own (Service._transform_beside), so that ingest, which is all a mirror's
freshness waits for, and egress go on while models run and mirrors fold.

Its own module so that the command line reads the choices without importing the service.
"""

DBT_IN_CYCLE, DBT_BESIDE = "in-cycle", "beside"
DBT_PLACES = (DBT_IN_CYCLE, DBT_BESIDE)
