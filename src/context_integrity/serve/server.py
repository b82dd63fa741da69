"""The whole stage as a process runs it: receivers, the stage, the forwarder, ``/metrics``.

:class:`Server` starts them in the order that loses nothing (the forwarder and the judge before the
receivers) and stops them in the reverse (the receivers first, so nothing arrives once the hold is
drained), within :data:`~context_integrity.limits.SERVE_SHUTDOWN_SECONDS` in all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..limits import SERVE_SHUTDOWN_JUDGE_SECONDS, SERVE_SHUTDOWN_SECONDS
from .forward import Forwarder, Target
from .hold import DEFAULT_LIMITS, HoldLimits
from .judging import JudgeTrace
from .metrics import HealthServer, StageMetrics
from .receive import Address, GrpcReceiver, HttpReceiver, show_address
from .stage import Stage

logger = logging.getLogger("context_integrity.serve")

# How long the gRPC receiver lets calls in flight finish once it stops taking new ones.
_GRPC_GRACE_SECONDS = 1.0


class Server:
    """A running ``context-integrity serve``."""

    def __init__(
        self,
        judge: JudgeTrace,
        target: Target,
        *,
        grpc: Address | None,
        http: Address | None,
        metrics: Address | None = None,
        limits: HoldLimits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = StageMetrics()
        self.forwarder = Forwarder(target, self.metrics, clock=clock)
        self.stage = Stage(judge, self.forwarder, self.metrics, limits=limits, clock=clock)
        self.grpc = GrpcReceiver(grpc, self.stage.accept, self.metrics) if grpc is not None else None
        self.http = HttpReceiver(http, self.stage.accept, self.metrics) if http is not None else None
        self.health = (
            HealthServer(metrics, self.metrics, lambda: self.stage.ready) if metrics is not None else None
        )
        self._stopped = False

    def start(self) -> None:
        if self.health is not None:
            self.health.start()
        self.stage.start()
        if self.grpc is not None:
            self.grpc.start()
        if self.http is not None:
            self.http.start()

    def addresses(self) -> dict[str, str]:
        """Where each part listens, as ``HOST:PORT`` (the port chosen, where 0 was asked)."""
        out: dict[str, str] = {}
        if self.grpc is not None:
            out["grpc"] = show_address(self.grpc.address)
        if self.http is not None:
            out["http"] = show_address(self.http.address)
        if self.health is not None:
            out["metrics"] = show_address(self.health.address)
        return out

    def stop(
        self,
        *,
        bound_seconds: float = SERVE_SHUTDOWN_SECONDS,
        judge_seconds: float = SERVE_SHUTDOWN_JUDGE_SECONDS,
    ) -> None:
        """Stop receiving, judge what is complete, forward everything held, drain: within the bound."""
        if self._stopped:
            return
        self._stopped = True
        started = time.monotonic()
        self.stage.ready = False
        if self.http is not None:
            self.http.stop()
        if self.grpc is not None:
            self.grpc.stop(_GRPC_GRACE_SECONDS)
        left = max(0.0, bound_seconds - (time.monotonic() - started))
        self.stage.stop(bound_seconds=left, judge_seconds=min(judge_seconds, left))
        if self.health is not None:
            self.health.stop()
