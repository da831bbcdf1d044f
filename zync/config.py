"""Where things are and how to reach them: project folder, targets, Kafka and registry settings.

The dbt profile (profiles/profiles.yml) and the connection settings
(profiles/zync.yml) are both rendered with dbt's `env_var()` so that one set of
environment variables drives dbt and zync alike.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from zync.errors import ZyncError

DBT_PROFILE_NAME = "zync"


def project_dir() -> Path:
    """The project root: $ZYNC_PROJECT_DIR, else the nearest folder upwards holding dbt_project.yml."""
    explicit = os.environ.get("ZYNC_PROJECT_DIR")
    if explicit:
        return Path(explicit).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "dbt_project.yml").is_file():
            return folder
    raise ZyncError(
        f"no dbt_project.yml in {here} or above: run zync from the project folder "
        "or set ZYNC_PROJECT_DIR"
    )


def state_dir() -> Path:
    """Where the embedded services, warehouse and metastore keep their data."""
    return project_path(os.environ.get("ZYNC_STATE_DIR", ".local/state"))


def local_dir() -> Path:
    """The ignored folder holding fetched jars and the unpacked registry."""
    return project_dir() / ".local"


def project_path(path: str | os.PathLike[str]) -> Path:
    """A path from a profile, relative to the project root as dbt resolves it."""
    p = Path(path)
    return p if p.is_absolute() else project_dir() / p


UNSET_MARK = "<<unset-env-var:"


def _env_var(name: str, default: str | None = None) -> str:
    """dbt's env_var(); an unset variable without default fails only if its target is used."""
    value = os.environ.get(name, default)
    return f"{UNSET_MARK}{name}>>" if value is None else value


def _check_set(settings: dict[str, Any], where: str) -> dict[str, Any]:
    for key, value in settings.items():
        if isinstance(value, str) and UNSET_MARK in value:
            name = value.split(UNSET_MARK, 1)[1].split(">>", 1)[0]
            raise ZyncError(f"{where}: `{key}` needs environment variable {name}, which is not set")
        if isinstance(value, dict):
            _check_set(value, where)
    return settings


def render_yaml_file(path: Path) -> Any:
    """Load a YAML file after rendering it as a Jinja template with dbt's env_var()."""
    if not path.is_file():
        raise ZyncError(f"{path} is missing")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    try:
        text = env.from_string(path.read_text()).render(env_var=_env_var)
        return yaml.safe_load(text)
    except (jinja2.TemplateError, yaml.YAMLError) as e:
        raise ZyncError(f"{path}: cannot read it: {e}") from e


def default_target() -> str:
    return os.environ.get("ZYNC_TARGET", "local")


@dataclass(frozen=True)
class Target:
    """One dbt target: its dbt output block and its Kafka / registry settings."""

    name: str
    dbt_output: dict[str, Any]
    kafka: dict[str, Any]
    schema_registry: dict[str, Any]

    @property
    def schema(self) -> str:
        """The Spark database dbt builds models in; raw tables land there too."""
        return str(self.dbt_output.get("schema", "default"))

    @property
    def spark_conf(self) -> dict[str, str]:
        """Spark settings of the target, paths made absolute against the project root."""
        conf = {k: str(v) for k, v in (self.dbt_output.get("server_side_parameters") or {}).items()}
        if "spark.jars" in conf:
            conf["spark.jars"] = ",".join(str(project_path(j.strip())) for j in conf["spark.jars"].split(","))
        if "spark.sql.warehouse.dir" in conf:
            conf["spark.sql.warehouse.dir"] = str(project_path(conf["spark.sql.warehouse.dir"]))
        if "spark.driver.extraJavaOptions" in conf:
            conf["spark.driver.extraJavaOptions"] = _absolute_java_paths(conf["spark.driver.extraJavaOptions"])
        url_key = "spark.hadoop.javax.jdo.option.ConnectionURL"
        prefix = "jdbc:derby:;databaseName="
        if conf.get(url_key, "").startswith(prefix):
            rest = conf[url_key][len(prefix):]
            db, _, options = rest.partition(";")
            conf[url_key] = f"{prefix}{project_path(db)};{options}"
        return conf

    @property
    def derby_metastore(self) -> Path | None:
        url = self.spark_conf.get("spark.hadoop.javax.jdo.option.ConnectionURL", "")
        prefix = "jdbc:derby:;databaseName="
        return Path(url[len(prefix):].split(";")[0]) if url.startswith(prefix) else None


_JAVA_PATH_OPTIONS = ("-Dlog4j.configurationFile=", "-Dderby.system.home=")


def _absolute_java_paths(options: str) -> str:
    """JVM options naming files, made absolute so that zync's jobs run from any folder like dbt does from the root."""
    parts = []
    for option in options.split():
        for prefix in _JAVA_PATH_OPTIONS:
            if option.startswith(prefix):
                option = prefix + str(project_path(option[len(prefix):]))
        parts.append(option)
    return " ".join(parts)


def _zync_home_settings() -> tuple[dict[str, Any], dict[str, Any]]:
    """zync's own $HOME/.zync/kafka.json and schema_registry.json, in librdkafka terms."""
    home = Path(os.environ.get("HOME", "~")).expanduser() / ".zync"
    kafka: dict[str, Any] = {}
    registry: dict[str, Any] = {}
    kafka_file, registry_file = home / "kafka.json", home / "schema_registry.json"
    if kafka_file.is_file():
        raw = json.loads(kafka_file.read_text())
        servers = raw.get("bootstrap_servers") or raw.get("BootstrapServers") or []
        kafka["bootstrap.servers"] = ",".join(servers) if isinstance(servers, list) else servers
        for ours, theirs in (
            ("security.protocol", "security_protocol"),
            ("sasl.mechanism", "sasl_mechanism"),
            ("sasl.username", "sasl_username"),
            ("sasl.password", "sasl_password"),
        ):
            if raw.get(theirs):
                kafka[ours] = raw[theirs]
    if registry_file.is_file():
        raw = json.loads(registry_file.read_text())
        registry["url"] = raw.get("url") or raw.get("URL")
        user, password = raw.get("user"), raw.get("password")
        if user:
            registry["basic.auth.user.info"] = f"{user}:{password or ''}"
    return kafka, registry


@cache
def load_target(name: str | None = None) -> Target:
    """Read the named target (default: $ZYNC_TARGET or 'local') from profiles/."""
    name = name or default_target()
    profiles = render_yaml_file(project_dir() / "profiles" / "profiles.yml")
    outputs = (profiles or {}).get(DBT_PROFILE_NAME, {}).get("outputs", {})
    if name not in outputs:
        raise ZyncError(
            f"target {name!r} is not in profiles/profiles.yml (targets there: {', '.join(outputs) or 'none'})"
        )
    connections = render_yaml_file(project_dir() / "profiles" / "zync.yml") or {}
    entry = connections.get(name) or {}
    kafka, registry = dict(entry.get("kafka") or {}), dict(entry.get("schema_registry") or {})
    if not kafka or not registry:
        home_kafka, home_registry = _zync_home_settings()
        kafka = kafka or home_kafka
        registry = registry or home_registry
    if not kafka.get("bootstrap.servers"):
        raise ZyncError(f"no Kafka settings for target {name!r}: add them to profiles/zync.yml")
    if not registry.get("url"):
        raise ZyncError(f"no schema registry settings for target {name!r}: add them to profiles/zync.yml")
    where = f"profiles/ target {name!r}"
    return Target(name=name, dbt_output=_check_set(dict(outputs[name]), where),
                  kafka=_check_set(kafka, where), schema_registry=_check_set(registry, where))
