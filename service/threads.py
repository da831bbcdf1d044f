"""How many topics `zync run` ingests at once in a cycle (`--threads`).

Its own module so that the command line reads the default without importing
the service (and Spark with it).
"""

DEFAULT_THREADS = 4
