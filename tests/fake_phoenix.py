"""A local HTTP endpoint speaking Phoenix's annotation shape: it keeps every body posted to it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakePhoenix(ThreadingHTTPServer):
    """Answers every POST with ``status``; ``bodies`` holds each body as sent, ``posts`` as parsed."""

    def __init__(self, status: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status = status
        self.bodies: list[str] = []
        self.posts: list[tuple[str, list[dict[str, Any]]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakePhoenix

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        self.server.bodies.append(body)
        self.server.posts.append((self.path, json.loads(body)["data"]))
        payload = b'{"data": []}'
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        return None


def serve(status: int) -> Iterator[FakePhoenix]:
    """A fake Phoenix on a free port for the length of a fixture."""
    server = FakePhoenix(status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
