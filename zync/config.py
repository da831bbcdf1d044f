"""Where things are and how to reach them: project folder, targets, Kafka and registry settings.

The dbt profile (profiles/profiles.yml) and the connection settings
(profiles/zync.yml) are both rendered with dbt's `env_var()` so that one set of
environment variables drives dbt and zync alike.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
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


_REQUIRED = object()


def project_var(name: str, default: Any = _REQUIRED) -> Any:
    """A var of the project's dbt_project.yml, as written there: the one home of a value that the dbt
    macros (`var()`) and zync's Python both read. `default` when the project does not set it, as
    the macros' `var(name, default)` reads it; without one, a project that does not set it is an error."""
    path = project_dir() / "dbt_project.yml"
    variables = (yaml.safe_load(path.read_text()) or {}).get("vars") or {}
    if name in variables:
        return variables[name]
    if default is not _REQUIRED:
        return default
    raise ZyncError(f"{path} has no var {name!r} under `vars:`: the project's macros and zync run both read it. "
                    "Restore it from the project's dbt_project.yml as shipped.")


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


# Settings holding secrets: never shown in a repr, a log line or an error message.
SECRET_KEYS = ("sasl.password", "ssl.key.password", "ssl.keystore.password", "basic.auth.user.info",
               "bearer.auth.token", "sasl.oauthbearer.client.secret")
# librdkafka settings naming files: relative paths are read from the project root, like dbt's.
FILE_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
             "ssl.crl.location", "sasl.kerberos.keytab")


def _hide_userinfo(value: Any) -> Any:
    if isinstance(value, str) and "://" in value and "@" in value.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = value.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return value


def redacted(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings with every secret replaced (and any user:password@ in a URL), for showing."""
    return {k: ("***" if k in SECRET_KEYS else _hide_userinfo(v)) for k, v in settings.items()}


@dataclass(frozen=True)
class Target:
    """One dbt target: its dbt output block and its Kafka / registry settings."""

    name: str
    dbt_output: dict[str, Any] = field(repr=False)
    kafka: dict[str, Any] = field(repr=False)
    schema_registry: dict[str, Any] = field(repr=False)
    # The dbt output zync's own Spark session is configured from, and that zync run's in-process dbt
    # uses: the target's own output, or the one its zync.yml entry names in `spark_target` (a target
    # whose dbt goes through a Thrift Server runs zync's jobs as applications of the same cluster).
    spark_output_name: str = ""
    spark_output: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (f"Target(name={self.name!r}, kafka={redacted(self.kafka)!r}, "
                f"schema_registry={redacted(self.schema_registry)!r})")
    @property
    def schema(self) -> str:
        """The Spark database dbt builds models in; raw tables land there too."""
        return str(self.dbt_output.get("schema", "default"))

    @property
    def spark_conf(self) -> dict[str, str]:
        """Spark settings of the target, paths made absolute against the project root."""
        conf = {k: str(v) for k, v in (self.spark_output.get("server_side_parameters") or {}).items()}
        if "spark.jars" in conf:
            conf["spark.jars"] = ",".join(str(project_path(j.strip())) for j in conf["spark.jars"].split(","))
        warehouse = conf.get("spark.sql.warehouse.dir", "")
        if warehouse and "://" not in warehouse and not warehouse.startswith("file:"):
            conf["spark.sql.warehouse.dir"] = str(project_path(warehouse))
        if "spark.driver.extraJavaOptions" in conf:
            conf["spark.driver.extraJavaOptions"] = _absolute_java_paths(conf["spark.driver.extraJavaOptions"])
        if "spark.driver.extraClassPath" in conf:
            conf["spark.driver.extraClassPath"] = os.pathsep.join(
                str(project_path(p.strip())) for p in conf["spark.driver.extraClassPath"].split(os.pathsep))
        return conf

    @property
    def catalog_address(self) -> tuple[str, int] | None:
        """(host, port) of the catalog server the target's Spark reaches its metastore at, or None."""
        return catalog_address(self.spark_conf)

    @property
    def derby_address(self) -> tuple[str, int] | None:
        """(host, port) of the Derby network server the embedded metastore client would use, or None."""
        return derby_address(self.spark_conf)


METASTORE_URIS = "spark.hadoop.hive.metastore.uris"


def metastore_service_address(spark_conf: dict[str, Any]) -> tuple[str, int] | None:
    """(host, port) of the metastore service (its first thrift:// URI) the target's Spark uses, or None:
    an empty setting keeps the metastore client embedded in each Spark process."""
    uris = str(spark_conf.get(METASTORE_URIS, "")).strip()
    if not uris:
        return None
    first = uris.split(",")[0].strip()
    host, _, port = first.removeprefix("thrift://").rstrip("/").rpartition(":")
    if not first.startswith("thrift://") or not host or not port.isdigit():
        raise ZyncError(f"the metastore URI {first!r} ({METASTORE_URIS}, ZYNC_METASTORE_URI) is not "
                        "thrift://HOST:PORT")
    return host, int(port)


def catalog_address(spark_conf: dict[str, Any]) -> tuple[str, int] | None:
    """(host, port) of the catalog server the target's Spark needs: the metastore service when one is
    set, else Derby's network server (the local target's shared catalog); None when neither is."""
    return metastore_service_address(spark_conf) or derby_address(spark_conf)


def derby_address(spark_conf: dict[str, Any]) -> tuple[str, int] | None:
    """(host, port) of the catalog's database server when the metastore is reached over the network
    (`jdbc:derby://host:port/...`, the local target's shared catalog); None otherwise."""
    url = str(spark_conf.get("spark.hadoop.javax.jdo.option.ConnectionURL", ""))
    prefix = "jdbc:derby://"
    if not url.startswith(prefix):
        return None
    host, _, port = url[len(prefix):].split("/", 1)[0].rpartition(":")
    if not port.isdigit():
        raise ZyncError(f"the catalog URL {url} names no port (jdbc:derby://HOST:PORT/DATABASE)")
    return host, int(port)


_JAVA_PATH_OPTIONS = ("-Dlog4j.configurationFile=", "-Dderby.system.home=", "-XX:SharedArchiveFile=")


def _absolute_java_paths(options: str) -> str:
    """JVM options naming files, made absolute so that zync's jobs run from any folder like dbt does from the root."""
    parts = []
    for option in options.split():
        for prefix in _JAVA_PATH_OPTIONS:
            if option.startswith(prefix):
                option = prefix + str(project_path(option[len(prefix):]))
        parts.append(option)
    return " ".join(parts)


# zync's $HOME/.zync/kafka.json keys -> librdkafka properties (zync's own README,
# kafka.json and Connection Guide).
_ZYNC_KAFKA_KEYS = {
    "security_protocol": "security.protocol",
    "sasl_mechanisms": "sasl.mechanism",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.username",
    "sasl_password": "sasl.password",
    "tls_server_ca_cert_file": "ssl.ca.location",
    "tls_client_cert_file": "ssl.certificate.location",
    "tls_client_key_file": "ssl.key.location",
}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ZyncError(f"{path}: not readable JSON ({e.__class__.__name__}); fix or remove it") from None
    if not isinstance(data, dict):
        raise ZyncError(f"{path}: expected a JSON object")
    return data


def zync_home_settings(home: Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """zync's own $HOME/.zync/kafka.json and schema_registry.json, in librdkafka / registry-client terms."""
    folder = (home or Path(os.environ.get("HOME", "~")).expanduser()) / ".zync"
    kafka: dict[str, Any] = {}
    registry: dict[str, Any] = {}
    kafka_file, registry_file = folder / "kafka.json", folder / "schema_registry.json"
    if kafka_file.is_file():
        raw = _read_json(kafka_file)
        servers = raw.get("bootstrap_servers") or []
        kafka["bootstrap.servers"] = ",".join(servers) if isinstance(servers, list) else servers
        for theirs, ours in _ZYNC_KAFKA_KEYS.items():
            if raw.get(theirs):
                kafka[ours] = raw[theirs]
        if kafka.get("security.protocol", "PLAINTEXT").upper() in ("PLAINTEXT", "SSL"):
            # zync's sample files name a SASL mechanism even without SASL; librdkafka would refuse it.
            kafka.pop("sasl.mechanism", None)
    if registry_file.is_file():
        raw = _read_json(registry_file)
        if raw.get("url"):
            registry["url"] = raw["url"]
        if raw.get("user"):
            registry["basic.auth.user.info"] = f"{raw['user']}:{raw.get('password') or ''}"
    return kafka, registry


def _resolve_files(settings: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(project_path(v)) if k in FILE_KEYS and isinstance(v, str) and v else v)
            for k, v in settings.items()}


@cache
def load_target(name: str | None = None) -> Target:
    """Read the named target (default: $ZYNC_TARGET or 'local') from profiles/.

    A target is a dbt output in profiles.yml with a Kafka / registry entry of the
    same name in zync.yml; a zync.yml entry may instead name the dbt output it
    runs Spark with (`dbt_target: local`), for extra connection targets. A
    missing `kafka` or `schema_registry` section falls back to zync's
    $HOME/.zync files.
    """
    name = name or default_target()
    profiles = render_yaml_file(project_dir() / "profiles" / "profiles.yml")
    outputs = (profiles or {}).get(DBT_PROFILE_NAME, {}).get("outputs", {})
    connections = render_yaml_file(project_dir() / "profiles" / "zync.yml") or {}
    entry = connections.get(name) or {}
    dbt_name = entry.get("dbt_target", name)
    if dbt_name not in outputs:
        known = sorted(set(outputs) | {k for k, v in connections.items() if isinstance(v, dict) and "dbt_target" in v})
        raise ZyncError(f"target {name!r} is not in profiles/profiles.yml or profiles/zync.yml "
                        f"(targets: {', '.join(known) or 'none'})")
    kafka, registry = dict(entry.get("kafka") or {}), dict(entry.get("schema_registry") or {})
    if not kafka or not registry:
        home_kafka, home_registry = zync_home_settings()
        kafka = kafka or home_kafka
        registry = registry or home_registry
    where = f"profiles/ target {name!r}"
    if not kafka.get("bootstrap.servers"):
        raise ZyncError(f"no Kafka settings for target {name!r}: add them to profiles/zync.yml "
                        "or to $HOME/.zync/kafka.json")
    if not registry.get("url"):
        raise ZyncError(f"no schema registry URL for target {name!r}: add it to profiles/zync.yml "
                        "or to $HOME/.zync/schema_registry.json")
    spark_name = entry.get("spark_target", dbt_name)
    if spark_name not in outputs:
        raise ZyncError(f"profiles/zync.yml target {name!r}: spark_target {spark_name!r} is not an output "
                        f"of profiles/profiles.yml (outputs: {', '.join(sorted(outputs))})")
    return Target(name=name, dbt_output=_check_set(dict(outputs[dbt_name]), where),
                  kafka=_resolve_files(_check_set(kafka, where)), schema_registry=_check_set(registry, where),
                  spark_output_name=spark_name, spark_output=_check_set(dict(outputs[spark_name]), where))
