# The two Quick-start commands: `make demo` and `make test`. Each does all of
# the set-up it needs (idempotent: a second run only checks), then its job.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LOCAL := .local

.PHONY: setup demo test jars venv bench-deps up down clean

setup: venv jars

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# compat: the project root goes on sys.path, where dbt finds its plugin dbt_zync/.
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	touch $@

# matplotlib, for bench/etl_history.py's plot; not needed by anything else.
bench-deps: setup
	$(BIN)/pip install --quiet -e '.[test,bench]'

jars: $(LOCAL)/.jars-installed
APICURIO_VERSION := 3.0.9
$(LOCAL)/.jars-installed: jvm/pom.xml Makefile
	mvn --quiet --batch-mode -f jvm/pom.xml package
	@# Apicurio 3.0.9's parent pom is missing from Maven Central, which every
	@# resolving goal refuses; dependency:get without transitives still fetches
	@# the artifact through Maven, and tar unpacks it from the local repository.
	mvn --quiet --batch-mode dependency:get -Dtransitive=false \
	  -Dartifact=io.apicurio:apicurio-registry-app:$(APICURIO_VERSION):tar.gz:all
	rm -rf $(LOCAL)/apicurio && mkdir -p $(LOCAL)/apicurio
	tar -xzf "$$(mvn --quiet --batch-mode help:evaluate -Dexpression=settings.localRepository -DforceStdout | sed 's/\x1b\[[0-9;]*m//g')/io/apicurio/apicurio-registry-app/$(APICURIO_VERSION)/apicurio-registry-app-$(APICURIO_VERSION)-all.tar.gz" -C $(LOCAL)/apicurio
	touch $@

up: setup
	$(BIN)/zync up

down:
	$(BIN)/zync down

demo: setup
	bash demo/invoices/run.sh

test: setup
	$(BIN)/pytest

clean:
	-$(BIN)/zync down
	rm -rf $(LOCAL)/state target logs
