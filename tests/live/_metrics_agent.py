"""A long-lived agent process for the Prometheus proof: runs once, then keeps serving its metrics.

Usage: python _metrics_agent.py mismatch|clean

Configured only through the standard environment (OTEL_METRICS_EXPORTER=prometheus and
OTEL_EXPORTER_PROMETHEUS_HOST/PORT), exactly as an operator would. ``mismatch`` runs the demo's
agent in warn mode (column-type-mismatch findings on host_group_mappings and port_counters);
``clean`` calls only the demo's disk tool, whose well-typed 0.0 GB result passes. It then prints
READY and serves its metrics endpoint until its stdin closes, so Prometheus can scrape it for as
long as the test needs.
"""

from __future__ import annotations

import sys

import context_integrity as ci
from context_integrity import demo


def main(mode: str) -> int:
    if mode == "mismatch":
        finished = demo.run_agent("warn").run
    elif mode == "clean":
        ci.setup(check_column_types="warn")
        with ci.run("How large are the gold image's disks?", agent_name=demo.AGENT_NAME) as finished:
            demo.vm_disk_capacity("vdi-a-gold")
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    ci.flush()
    print(f"READY findings={len(finished.findings)}", flush=True)
    sys.stdin.read()  # serve the metrics endpoint until the test closes our stdin
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
