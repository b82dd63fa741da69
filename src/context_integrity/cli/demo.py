"""``context-integrity demo``: a scripted agent whose story trips every check once."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def add_parser(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="run a scripted agent whose story trips every check once (no network, no key)",
    )
    demo.add_argument(
        "--only",
        choices=("column-types",),
        help="only the short column-types demo: three field failures, in warn then enforce",
    )
    demo.add_argument(
        "--mode",
        choices=("warn", "enforce", "both"),
        default="both",
        help="with --only column-types: the check_column_types dial (default: both, warn then enforce)",
    )
    demo.add_argument(
        "--recording",
        metavar="FILE",
        help="where to record traces when no OTLP endpoint is configured",
    )
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from .. import demo
    from ..telemetry import setup as telemetry_setup

    if args.recording:
        # The same service name the demo asks for: a second setup() may not change it.
        service = os.environ.get("OTEL_SERVICE_NAME") or demo.AGENT_NAME
        telemetry_setup.setup(recording_path=args.recording, service_name=service)
    modes = ("warn", "enforce") if args.mode == "both" else (args.mode,)
    return demo.main(sys.stdout, modes, only=args.only)
