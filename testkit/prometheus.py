"""A Prometheus server (Debian's package, unpacked by `make prometheus`) scraping one `zync run`, and its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from testkit.invoices import ROOT

BINARY = ROOT / ".local" / "prometheus" / "usr" / "bin" / "prometheus"


class Prometheus:
    """Prometheus on loopback at `port`, scraping `targets` every `every` seconds, its data in `folder`."""

    def __init__(self, folder: Path, port: int, targets: list[str], every: str = "1s"):
        if not BINARY.exists():
            raise AssertionError(f"no Prometheus server at {BINARY}: run `make prometheus` (Debian's package)")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        config = folder / "prometheus.yml"
        config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
            "scrape_configs": [{"job_name": "zync", "static_configs": [{"targets": targets}]}]}))
        self.url = f"http://127.0.0.1:{port}"
        self.log = folder / "prometheus.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [str(BINARY), f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}"], stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=2)
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("Prometheus did not start:\n" + self.log.read_text()[-2000:]) from None
                time.sleep(0.2)

    def query(self, expression: str) -> dict[tuple, float]:
        """An instant query: {labels (sorted (name, value) pairs, without __name__): value}."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
        answer = json.loads(urllib.request.urlopen(url, timeout=10).read())
        if answer["status"] != "success":
            raise AssertionError(f"Prometheus refused {expression!r}: {answer}")
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(r["value"][1])
                for r in answer["data"]["result"]}

    def value(self, expression: str) -> float | None:
        """The single value of an instant query, or None when it has no series (yet)."""
        found = self.query(expression)
        if len(found) > 1:
            raise AssertionError(f"{expression!r} has {len(found)} series: {found}")
        return next(iter(found.values()), None)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
