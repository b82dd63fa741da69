"""Start, wait for and stop the real backends the live tests talk to, all on loopback.

Every wait is bounded and every failure message carries the tail of the service's own log, so a
red CI run says what the backend said. A missing prerequisite fails the test when ``CI`` is set
(a skip there would hide a missing install step) and skips it on a developer's machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
ARTIFACTS = REPO / "test-artifacts"
CACHE_DIR = Path(os.environ.get("CI_CACHE", "/var/cache/context-integrity"))
PHOENIX_BIN = Path(os.environ.get("PHOENIX_VENV", str(CACHE_DIR / "phoenix-venv"))) / "bin" / "phoenix"
CHROMIUM_BIN = Path("/usr/bin/chromium")
LOG_TAIL_CHARS = 4000
PHOENIX_START_TIMEOUT_S = 300  # first start runs its database migrations

T = TypeVar("T")


def missing(what: str, hint: str) -> NoReturn:
    message = f"{what} is missing: {hint} (.ci/system-deps installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def require_executable(name_or_path: str | Path, hint: str) -> str:
    found = shutil.which(str(name_or_path))
    if found is None:
        missing(str(name_or_path), hint)
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()


def http_json(url: str, timeout: float = 10.0) -> Any:
    status, body = http_get(url, timeout)
    assert status == 200, f"GET {url} -> {status}: {body[:500]!r}"
    return json.loads(body)


def wait_until(
    probe: Callable[[], T | None], *, timeout_s: float, what: str, interval_s: float = 0.5, log: str = ""
) -> T:
    """Poll ``probe`` until it returns something other than None/False, or fail after the timeout."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except (OSError, AssertionError, ValueError, KeyError) as error:
            last_error, value = error, None
        if value is not None and value is not False:
            return value
        time.sleep(interval_s)
    detail = f"\nlast error: {last_error!r}" if last_error else ""
    pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}{detail}{log}")


@dataclass
class Service:
    """A subprocess whose output goes to a log file in its own working directory."""

    name: str
    argv: list[str]
    workdir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def start(self) -> Service:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            self.argv,
            cwd=self.workdir,
            env={**os.environ, **self.env},
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        return self

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"\n--- no log for {self.name} ---"
        return f"\n--- last lines of {self.name}'s log ({self.log_path}) ---\n{text[-LOG_TAIL_CHARS:]}"

    def wait_http(self, url: str, *, timeout_s: float, ok: Callable[[bytes], bool] = lambda _: True) -> None:
        def probe() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                pytest.fail(f"{self.name} exited with {self.process.returncode}{self.log_tail()}")
            status, body = http_get(url, timeout=2)
            return status == 200 and ok(body)

        wait_until(probe, timeout_s=timeout_s, what=f"{self.name} at {url}", log=self.log_tail())

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if self.process.stdin:  # the metrics agent waits for its stdin to close
            self.process.stdin.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


@dataclass(frozen=True)
class Phoenix:
    base_url: str
    grpc_port: int
    service: Service


@contextmanager
def running_phoenix(workdir: Path) -> Iterator[Phoenix]:
    """Phoenix from its own venv, on free loopback ports, working in ``workdir``; stopped after."""
    if not PHOENIX_BIN.exists():
        missing(f"Phoenix at {PHOENIX_BIN}", "a venv with arize-phoenix")
    http_port, grpc_port = free_port(), free_port()
    service = Service(
        name="phoenix",
        argv=[str(PHOENIX_BIN), "serve"],
        workdir=workdir,
        env={
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(http_port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_WORKING_DIR": str(workdir),
            # No usage telemetry: the machine reaches no network but package registries.
            "PHOENIX_TELEMETRY_ENABLED": "false",
        },
    ).start()
    try:
        base = f"http://127.0.0.1:{http_port}"
        service.wait_http(f"{base}/healthz", timeout_s=PHOENIX_START_TIMEOUT_S)
        yield Phoenix(base_url=base, grpc_port=grpc_port, service=service)
    finally:
        service.stop()


# Headless Chromium with nothing reaching for the network; how long one step of the UI may take.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
UI_TIMEOUT_MS = 30_000


@contextmanager
def phoenix_span_page(base_url: str, span_id: str, *, height: int = 1200) -> Iterator[Any]:
    """Phoenix's UI in headless Chromium, opened on span ``span_id`` (Phoenix resolves an OTel span
    id to its trace view with that span selected); the browser is closed on leaving."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright Python package", "pip install playwright (the test extra has it)")
    if not CHROMIUM_BIN.exists():
        missing(str(CHROMIUM_BIN), "the Debian chromium package")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM_BIN), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1600, "height": height})
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(f"{base_url}/redirects/spans/{span_id}")
            yield page
        finally:
            browser.close()


def finding_event_in_phoenix_ui(
    base_url: str, span_id: str, witness_key: str, witness_value: str, screenshot: Path
) -> str:
    """Phoenix's UI on span ``span_id``'s Events tab, its ``context_integrity.finding`` event opened
    until ``witness_key`` and ``witness_value`` show; the page saved to ``screenshot``; its text."""
    from context_integrity.telemetry.schema import names

    screenshot.parent.mkdir(exist_ok=True)
    with phoenix_span_page(base_url, span_id) as page:
        page.get_by_role("tab", name=re.compile(r"^Events")).click()
        event = page.get_by_text(names.FINDING_EVENT, exact=True).first
        event.wait_for()
        witness = page.get_by_text(witness_key, exact=True).first
        if not witness.is_visible():
            event.click()  # expand the event to show its attributes
        witness.wait_for()
        page.get_by_text(witness_value, exact=True).first.wait_for()
        page.screenshot(path=str(screenshot), full_page=True)
        return str(page.inner_text("body"))


def library_env(**extra: str) -> dict[str, str]:
    """Environment for a subprocess that imports the library from this checkout."""
    pythonpath = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    # Drop any OTEL_* the developer's shell carries: each test states its whole configuration.
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**base, "PYTHONPATH": pythonpath, **extra}


def run_demo(
    env: Mapping[str, str], *, timeout_s: float = 120, args: tuple[str, ...] = ("--only", "column-types")
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "demo", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, f"demo exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


class WebhookReceiver:
    """An Alertmanager webhook receiver on loopback that keeps every notification it gets."""

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.notifications.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def alerts(self) -> list[dict[str, Any]]:
        with self._lock:
            return [alert for n in self.notifications for alert in n.get("alerts", [])]
