"""``context-integrity demo``: a scripted agent whose story trips every check once."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from . import _common

NAME = "demo"

DESCRIPTION = """\
Run a scripted storage-triage agent, with no network and no model key, that is written to break
once per check: each finding it prints is one the library is meant to file. The output keys the
seams, prints each finding whole, and shows the run's disposition ledger, in which every check
was checked at least once. Its traces go where ci.setup() sends them (a local recording unless an
OTLP endpoint is configured); `context-integrity report` reads them back.

--only column-types runs the short demo instead: three tools reproducing the column-type field
failures, once with check_column_types="warn" and once with "enforce" (--mode picks one).
"""

EXAMPLE = """\
context-integrity demo                                  # the whole family, one run
context-integrity demo --brief                          # one line per finding
context-integrity demo --only column-types --mode enforce
"""


def add_parser(commands: Any) -> None:
    demo = _common.subcommand(
        commands,
        NAME,
        help="run a scripted agent whose story trips every check once (no network, no key)",
        description=DESCRIPTION,
        example=EXAMPLE,
    )
    demo.add_argument(
        "--only",
        choices=("column-types",),
        help="only the short column-types demo: three field failures, in warn then enforce",
    )
    demo.add_argument(
        "--mode",
        choices=("warn", "enforce", "both"),
        help="with --only column-types: the check_column_types dial (default: both, warn then enforce)",
    )
    demo.add_argument("--brief", action="store_true", help="one line per finding instead of each whole")
    demo.add_argument(
        "--recording",
        metavar="FILE",
        help="where to record traces when no OTLP endpoint is configured",
    )
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.mode is not None and args.only is None:
        _common.refuse(
            args,
            "--mode sets the column dial of the short demo: add --only column-types "
            "(the whole family runs check_column_types='warn')",
        )
    import logging

    from .. import demo
    from ..telemetry import setup as telemetry_setup

    # The demo says where its traces went in its own sentence; the library's line would repeat it.
    handler = logging.StreamHandler()
    handler.addFilter(telemetry_setup.not_where_traces_go)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[handler])
    if args.recording:
        # The same service name the demo asks for: a second setup() may not change it.
        service = os.environ.get("OTEL_SERVICE_NAME") or demo.AGENT_NAME
        telemetry_setup.setup(recording_path=args.recording, service_name=service)
    mode = args.mode or "both"
    modes = ("warn", "enforce") if mode == "both" else (mode,)
    return demo.main(sys.stdout, modes, only=args.only, brief=args.brief)
