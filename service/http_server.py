"""The HTTP server of `zync run --metrics ADDR`: Prometheus' text format at /metrics (and /), health at /healthz.

A threaded WSGI server on a daemon thread: a scrape or probe never waits for
a cycle, and the server goes with the process. Requests are not logged: the
run's stderr keeps one JSON object per line.
"""

from __future__ import annotations

import json
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from service.health import Health
from zync.errors import ZyncError

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 9471
DEFAULT_ADDRESS = f"{DEFAULT_HOST}:{DEFAULT_PORT}"


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        pass


def parse_address(text: str) -> tuple[str, int] | None:
    """--metrics ADDR: HOST:PORT, PORT or HOST (the other part by default); `off`: None."""
    text = text.strip()
    if text.lower() == "off":
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = (text, str(DEFAULT_PORT)) if not text.isdigit() else (DEFAULT_HOST, text)
    host = host.strip("[]") or DEFAULT_HOST
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ZyncError(f"--metrics takes HOST:PORT, PORT, HOST or off, not {text!r}")
    return host, int(port)


def app(registry, health: Health):
    from prometheus_client import make_wsgi_app  # here: the CLI imports this module's defaults at every start

    metrics = make_wsgi_app(registry)

    def route(environ, start_response):
        if environ.get("PATH_INFO") == "/healthz":
            report = health.check()
            body = json.dumps(report.as_json()).encode()
            start_response("200 OK" if report.ok else "503 Service Unavailable",
                           [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        return metrics(environ, start_response)

    return route


def serve(address: tuple[str, int], registry, health: Health) -> WSGIServer:
    """Start serving at `address`; OSError if it cannot be bound (the port taken, say)."""
    server = make_server(address[0], address[1], app(registry, health), _Server, _QuietHandler)
    threading.Thread(target=server.serve_forever, name="zync-http", daemon=True).start()
    return server
