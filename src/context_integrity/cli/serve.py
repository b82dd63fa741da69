"""``context-integrity serve``: the judge as an OTLP pipeline stage (see docs/serve.md)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType
from typing import Any, Final

from ._dials import add_dial_arguments, dials_of

DEFAULT_GRPC: Final = "127.0.0.1:4317"
DEFAULT_HTTP: Final = "127.0.0.1:4318"
# A pipeline stage cannot enforce (the agent has its rows already): the column check is off or warn.
COLUMN_CHOICES: Final = ("off", "warn")

NAME = "serve"


def add_parser(commands: Any) -> None:
    serve = commands.add_parser(
        NAME,
        help="judge agents' traces in flight: an OTLP stage between the Collector and the backend",
        description=(
            "Receive OTLP traces (gRPC and HTTP, protobuf and JSON), hold the spans of agent work by "
            "trace until the trace is complete, judge it with the contracts file, and forward every span "
            "with the findings written on the spans they are about and a summary span under each run. "
            "Spans of traces with no agent work are forwarded at once."
        ),
        epilog="example: context-integrity serve --contracts contracts.toml --forward http://collector:4318",
    )
    serve.add_argument(
        "--contracts",
        metavar="FILE",
        help="the contracts file (TOML, or a pyproject.toml with [tool.context-integrity])",
    )
    serve.add_argument(
        "--forward",
        metavar="ENDPOINT",
        required=True,
        help="where every span goes next: http://HOST:PORT (OTLP/HTTP protobuf; path /v1/traces unless "
        "given), https://..., grpc://HOST:PORT or grpcs://HOST:PORT (OTLP/gRPC)",
    )
    serve.add_argument(
        "--listen-grpc",
        metavar="HOST:PORT",
        default=DEFAULT_GRPC,
        help=f"OTLP/gRPC (default {DEFAULT_GRPC}; port 0 picks one)",
    )
    serve.add_argument(
        "--listen-http",
        metavar="HOST:PORT",
        default=DEFAULT_HTTP,
        help=f"OTLP/HTTP (default {DEFAULT_HTTP}; port 0 picks one)",
    )
    serve.add_argument(
        "--metrics", metavar="HOST:PORT", help="serve /metrics (Prometheus), /healthz and /readyz here"
    )
    serve.add_argument(
        "--quiet-seconds",
        type=float,
        metavar="S",
        help="judge a trace this long after its last span, once its agent run span has ended",
    )
    serve.add_argument(
        "--max-wait-seconds",
        type=float,
        metavar="S",
        help="judge a trace at most this long after its first span",
    )
    add_dial_arguments(
        serve, column_choices=COLUMN_CHOICES, why="a pipeline cannot refuse rows the agent has"
    )
    serve.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    serve.set_defaults(run=run, _parser=serve)


def _fail(message: str) -> int:
    print(f"context-integrity serve: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ..contracts import DeclarationError
    from ..contracts.file import find_contracts, load_contracts
    from ..judge.book import ContractBook
    from ..limits import SERVE_MAX_WAIT_SECONDS, SERVE_QUIET_SECONDS
    from ..serve import logs
    from ..serve.forward import EndpointError, target_of
    from ..serve.hold import HoldLimits
    from ..serve.judging import TraceJudge
    from ..serve.receive import parse_address
    from ..serve.server import Server

    logs.configure(getattr(logging, args.log_level.upper()))
    logger = logging.getLogger(logs.LOGGER)
    try:
        grpc = parse_address(args.listen_grpc, "--listen-grpc")
        http = parse_address(args.listen_http, "--listen-http")
        metrics = parse_address(args.metrics, "--metrics") if args.metrics else None
        target = target_of(args.forward)
    except (ValueError, EndpointError) as error:
        return _fail(str(error))
    quiet = SERVE_QUIET_SECONDS if args.quiet_seconds is None else args.quiet_seconds
    max_wait = SERVE_MAX_WAIT_SECONDS if args.max_wait_seconds is None else args.max_wait_seconds
    if not 0 <= quiet <= max_wait:
        return _fail("--quiet-seconds must be at least 0 and at most --max-wait-seconds")
    book = ContractBook()
    found = find_contracts(args.contracts)
    if found is None:
        logger.warning(
            "no contracts file: no tool is declared, so only the checks that need no declaration run "
            "(name one with --contracts or $CONTEXT_INTEGRITY_CONTRACTS)"
        )
    else:
        try:
            declarations = load_contracts(found.path)
            book.declare_all(declarations.tools, declarations.claims, declarations.toolsets)
        except DeclarationError as error:
            return _fail(str(error))
        logger.info(
            "declarations read from %s",
            declarations.source,
            extra={"tools": len(declarations.tools), "claims": len(declarations.claims)},
        )
    try:
        dials = dials_of(args)
    except ValueError as error:
        return _fail(str(error))
    try:
        server = Server(
            TraceJudge(book, dials),
            target,
            grpc=grpc,
            http=http,
            metrics=metrics,
            limits=HoldLimits(quiet_seconds=quiet, max_wait_seconds=max_wait),
        )
    except OSError as error:
        return _fail(f"cannot listen: {error}")
    stop = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    addresses = " ".join(f"{key}={value}" for key, value in server.addresses().items())
    print(f"context-integrity serve: listening {addresses} forward={target.description}", flush=True)
    logger.info("listening", extra={**server.addresses(), "forward": target.description})
    while not stop.wait(1.0):
        pass
    logger.info("stopping: judging what is complete, forwarding everything held")
    server.stop()
    return 0
