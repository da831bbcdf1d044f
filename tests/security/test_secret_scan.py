"""No secret leaves where it is kept: every verb run over SASL_SSL and mutual TLS as a user runs it
(separate processes, real broker), then every line they printed and every file zync, dbt and the
services wrote (dbt's target/ and logs/, the state folder's logs, Spark's and the services' logs) is
searched for the SASL password and the TLS client key. Neither may appear anywhere but where the
user put it (the key file, the broker's own credential store).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stack import local_security
from zync.config import load_target, state_dir

ROOT = Path(__file__).resolve().parents[2]
ZYNC = [str(Path(sys.executable).parent / "zync")]  # the installed command, as users run it
# Where a secret may be: the files that hold it on purpose (the broker's TLS material and password
# file, and its server.properties, which holds PLAIN's user list as Kafka wants it).
KEPT = ("kafka/security/", "kafka/server.properties")


def key_lines(path: Path) -> list[str]:
    """The base64 body lines of a PEM private key (a leaked key shows at least one of them)."""
    return [line for line in path.read_text().splitlines() if line and not line.startswith("-----")]


def zync(*args: str, env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run([*ZYNC, *args], env=env, input=stdin, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, f"zync {' '.join(args)} failed:\n{done.stderr[-2000:]}"
    return done.stdout + done.stderr


def written_files(*folders: Path) -> list[Path]:
    """Every file under the folders but the ones that keep a secret on purpose and table data."""
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [p for p in folder.rglob("*") if p.is_file()
                      and not p.relative_to(folder).as_posix().startswith(KEPT)
                      and "warehouse" not in p.parts and p.stat().st_size < 50_000_000]
    return found


@pytest.fixture(scope="module")
def secrets(target):
    kafka = state_dir() / "kafka"
    password = local_security.sasl_password(kafka)
    key = local_security.security_dir(kafka) / "client-key.pem"
    assert len(password) >= 16 and key.exists()
    return password, key_lines(key)


def every_verb(name: str, env: dict[str, str]) -> list[str]:
    """produce, consume, ls and from-kafka over one secured target, in that order: what each printed."""
    topic = f"security_scan_{name.replace('-', '_')}"
    return [
        zync("produce", "--target", name, "--topic", topic, "-", env=env,
             stdin='{"key": {"id": 1}, "value": {"id": 1, "v": "a"}}\n'),
        zync("consume", "--target", name, "--topic", topic, "--from-beginning", "--exit-after", "1s", env=env),
        zync("ls", "--target", name, env=env),
        zync("from-kafka", "--target", name, "--topic", topic, "--exit-after", "1s", env=env),
    ]


def test_no_secret_in_any_output_log_or_generated_file(target, secrets):
    password, key = secrets
    env = {**os.environ, "ZYNC_KAFKA_PASSWORD": password}
    # The two targets' verbs run side by side (each target's in order, on topics and tables of its own):
    # their from-kafka processes then start Spark at the same time rather than one after the other.
    with ThreadPoolExecutor(2) as pool:
        printed = [text for texts in pool.map(lambda name: every_verb(name, env), ("local-sasl", "local-mtls"))
                   for text in texts]
    load_target.cache_clear()
    for text in printed:
        assert password not in text
        assert not any(line in text for line in key)
    files = written_files(ROOT / "target", ROOT / "logs", state_dir())
    assert files, "nothing written to search"
    leaked = []
    for path in files:
        data = path.read_bytes()
        if password.encode() in data or any(line.encode() in data for line in key):
            leaked.append(str(path))
    assert leaked == [], f"secrets found in {leaked}"
