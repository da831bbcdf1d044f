# The two Quick-start commands: `make demo` and `make test`. Each does all of
# the set-up it needs (idempotent: a second run only checks), then its job.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LOCAL := .local

.PHONY: prometheus setup demo demo-postgres demo-database test test-cluster fuzz jars venv postgres class-archive bench-deps bench-report docs up up-connect down clean chaos-run chaos torn-reads

setup: venv jars postgres class-archive prometheus

# PostgreSQL for Debezium (`zync up --connect`, tests/debezium): Debian's
# `postgresql` package, installed only when no server binary is there (a
# second run only checks). As root it runs apt-get itself; otherwise through
# sudo when available, else it says what to run.
PG_SERVER := $(firstword $(wildcard /usr/lib/postgresql/*/bin/postgres))
postgres:
ifeq ($(PG_SERVER),)
	@if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO=sudo; else \
	  echo "PostgreSQL is missing: run 'apt-get update && apt-get install -y postgresql' as root" >&2; exit 1; fi; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null
	@test -n "$$(ls /usr/lib/postgresql/*/bin/postgres 2>/dev/null)" || { echo "installing postgresql gave no /usr/lib/postgresql/*/bin/postgres" >&2; exit 1; }
endif

# The Prometheus server the metrics test scrapes `zync run` with (tests/service/test_metrics.py):
# Debian's package at a pinned version, unpacked into .local/prometheus (no root needed, nothing
# installed system-wide). apt-get download needs the package lists: as root it updates them
# when the first try fails; otherwise it says what to run.
PROMETHEUS_DEB := 2.42.0+ds-5+deb12u1
prometheus: $(LOCAL)/prometheus/.installed
$(LOCAL)/prometheus/.installed: Makefile
	rm -rf $(LOCAL)/prometheus && mkdir -p $(LOCAL)/prometheus/deb
	cd $(LOCAL)/prometheus/deb && { apt-get download -qq prometheus=$(PROMETHEUS_DEB) 2>/dev/null || \
	  { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get download -qq prometheus=$(PROMETHEUS_DEB); else \
	    echo "cannot download Debian's prometheus $(PROMETHEUS_DEB): run 'apt-get update' as root, then make again" >&2; false; fi; }; }
	dpkg -x $(LOCAL)/prometheus/deb/prometheus_*.deb $(LOCAL)/prometheus
	rm -rf $(LOCAL)/prometheus/deb
	$(LOCAL)/prometheus/usr/bin/prometheus --version | head -1
	touch $@

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# compat: the project root goes on sys.path, where dbt finds its plugin dbt_zync/.
	$(BIN)/pip install --quiet -e '.[test,cluster,docs]' --config-settings editable_mode=compat
	touch $@

# matplotlib, for the benchmarks' plots (bench/plots.py, bench/etl_history.py); not needed by anything else.
bench-deps: setup
	$(BIN)/pip install --quiet -e '.[test,cluster,docs,bench]' --config-settings editable_mode=compat

# The benchmarks page: its figures (docs/benchmarks.md) and plots (docs/img/bench/) from the record,
# bench/results/figures.json, which bench/record.py fills from a benchmark's JSON in bench/out/.
bench-report: bench-deps
	$(BIN)/python bench/report.py

# The documentation site (docs/, mkdocs.yml) into site/; --strict turns a broken link or a page
# missing from the navigation into a failure.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

jars: $(LOCAL)/.jars-installed
APICURIO_VERSION := 3.0.9
$(LOCAL)/.jars-installed: jvm/pom.xml $(wildcard jvm/connect/*/pom.xml) jvm/delta-log-listing/pom.xml $(wildcard jvm/delta-log-listing/src/main/java/zync/*/*.java) jvm/session-catalog/pom.xml $(wildcard jvm/session-catalog/src/main/java/zync/*/*.java) jvm/delta-commits/pom.xml $(wildcard jvm/delta-commits/src/main/java/zync/*/*.java) jvm/s3proxy/pom.xml Makefile
	@# copy-dependencies never removes a jar: a changed pin must not leave its
	@# old version beside the new one on Connect's plugin.path.
	rm -rf $(LOCAL)/connect
	mvn --quiet --batch-mode -f jvm/pom.xml package
	@# Apicurio 3.0.9's parent pom is missing from Maven Central, which every
	@# resolving goal refuses; dependency:get without transitives still fetches
	@# the artifact through Maven, and tar unpacks it from the local repository.
	mvn --quiet --batch-mode dependency:get -Dtransitive=false \
	  -Dartifact=io.apicurio:apicurio-registry-app:$(APICURIO_VERSION):tar.gz:all
	rm -rf $(LOCAL)/apicurio && mkdir -p $(LOCAL)/apicurio
	tar -xzf "$$(mvn --quiet --batch-mode help:evaluate -Dexpression=settings.localRepository -DforceStdout | sed 's/\x1b\[[0-9;]*m//g')/io/apicurio/apicurio-registry-app/$(APICURIO_VERSION)/apicurio-registry-app-$(APICURIO_VERSION)-all.tar.gz" -C $(LOCAL)/apicurio
	touch $@

# The Spark driver's class-data archive (stack/class_archive.py): every new driver maps the
# classes it would load from it, ~4 s sooner; built again when the jars or the profile change.
class-archive: $(LOCAL)/jsa/spark-driver.jsa
$(LOCAL)/jsa/spark-driver.jsa: $(VENV)/.installed $(LOCAL)/.jars-installed profiles/profiles.yml stack/class_archive.py
	@# An optimisation only: without it drivers start the usual way, so a failure stops nothing.
	-$(BIN)/python -m stack.class_archive

up: setup
	$(BIN)/zync up

up-connect: setup
	$(BIN)/zync up --connect

# Every state folder the project's commands use is .local/<name>state: `zync up`'s (state), each
# demo's (demo/*/run.sh: demo-state, demo-postgres-state, demo-database-state) and the tests'
# (test-state). `make down` stops the services of each, `make clean` also deletes them; a folder
# set elsewhere by ZYNC_STATE_DIR takes `ZYNC_STATE_DIR=... zync down`.
STATE_DIRS = $(abspath $(wildcard $(LOCAL)/*state))
down:
	@set -o pipefail; failed=0; for state in $(STATE_DIRS); do echo "$$state:"; \
	  ZYNC_STATE_DIR="$$state" $(BIN)/zync down | sed 's/^/  /' || failed=1; done; exit $$failed

demo: setup
	bash demo/invoices/run.sh

# The invoices demo through real PostgreSQL, Debezium and the JDBC sink (docs/debezium.md).
demo-postgres: setup
	bash demo/postgres/run.sh

# A whole database: 20 PostgreSQL tables mirrored by one `topics:` entry, a table added while it runs.
demo-database: setup
	bash demo/database/run.sh

test: setup
	$(BIN)/pytest

# The Spark cluster's long run (tests/cluster, marker `campaign`; `make test` runs its short version):
# zync's invoices demo and a database of 20 tables through `zync run --target cluster`, dbt test and
# dbt run through the Thrift Server, on workers that share only the S3 server and the catalog service.
test-cluster: setup
	$(BIN)/pytest -p no:cacheprovider -m '' tests/cluster

# The random-input tests at length: the compiler's and `zync produce`'s fuzzers with 3,000 examples
# each, and 25 examples of random Avro schemas through ingest and egress with a new seed each run
# (the suite runs 150, 150 and 2 of a fixed seed). ZYNC_FUZZ_SEED=N repeats a run.
fuzz: setup
	ZYNC_FUZZ_EXAMPLES=$${ZYNC_FUZZ_EXAMPLES:-3000} ZYNC_FUZZ_EXAMPLES_SLOW=$${ZYNC_FUZZ_EXAMPLES_SLOW:-25} \
	  ZYNC_FUZZ_SEED=$${ZYNC_FUZZ_SEED:-} $(BIN)/pytest -p no:cacheprovider \
	  tests/unit/test_compiler_fuzz.py tests/unit/test_produce_fuzz.py tests/ingest/test_type_fuzz.py

# --purge also deletes what the state folder owns outside it (PostgreSQL's data, when run as root);
# rm -rf is for a clone whose venv is gone.
clean:
	-@set -o pipefail; failed=0; for state in $(STATE_DIRS); do echo "$$state:"; \
	  ZYNC_STATE_DIR="$$state" $(BIN)/zync down --purge | sed 's/^/  /' || failed=1; done; exit $$failed
	rm -rf $(STATE_DIRS) target logs site

# `zync run` killed with kill -9 at 10 seeded random moments (docs/running.md);
# the suite runs the same test with one. ZYNC_RUN_KILL_SEED picks other moments.
chaos-run: setup
	ZYNC_RUN_KILL_TRIALS=$${ZYNC_RUN_KILL_TRIALS:-10} $(BIN)/pytest -p no:cacheprovider tests/service/test_run_service.py

# Torn reads (tests/debezium/test_torn_reads.py, marker `campaign`; `make test` checks the cut with
# tests/debezium/test_transaction_cut.py instead): readers query a connector's mirrors without pause while
# `zync run --settle-every 5s` moves multi-table transactions, with and without `consistency: transaction`:
# the mirrors' views (cut off, cut on) and the bases at the settled cut, in Spark and with delta-rs. The
# workload runs ZYNC_TORN_SECONDS (120 by default), and on until ZYNC_TORN_READS reads at the settled cut
# with delta-rs (10,000 by default), ZYNC_TORN_SPARK_READS in Spark (20) and ZYNC_TORN_VIEW_READS of the
# views at the cut (15) were made while it ran (on a 2-core machine, with every reader and `zync run` at
# once, a read takes 0.52 s with delta-rs, 18 s at the settled cut in Spark and 98 s of the views: with
# ZYNC_TORN_SECONDS=300 ZYNC_TORN_VIEW_READS=8 the whole run took 93 minutes; docs/benchmarks.md). It
# prints every side's reads, torn reads and the settled cuts read.
torn-reads: setup
	$(BIN)/pytest -p no:cacheprovider -m campaign -s tests/debezium/test_torn_reads.py

# The fault campaign (bench/chaos.py): 32 seeded trials of kill -9, SIGTERM, broker and registry
# restarts, a second `zync run` and kill -9 of zync run's Spark JVM, each checked for lost, duplicated
# and misordered records and for mirror rows unlike the current state.
chaos: setup
	$(BIN)/python bench/chaos.py $(CHAOS_ARGS)
