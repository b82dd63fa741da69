"""The findings counter read back from a recording's metric lines."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from ..telemetry.schema import names
from .model import FindingCountKey
from .otlp_json import RESOURCE_METRICS, TEMPORALITY_DELTA, as_list, as_object, attributes, double, int64


class FindingCounter:
    """Sums the ``context_integrity.findings`` counter per kind, seam and tool.

    A cumulative series (one process's counter for one attribute set since its
    start time) counts at its latest point; delta points add up.
    """

    def __init__(self) -> None:
        # Per cumulative series, keyed by kind, seam, tool and then the
        # series' identity: (time, value) of its latest point.
        self._cumulative: dict[tuple[object, ...], tuple[int, int]] = {}
        self._delta: dict[FindingCountKey, int] = {}
        self.points = 0

    def line(self, resource_metrics: object, problem: Callable[[str], None]) -> None:
        """Take in one line's ``resourceMetrics``; raises :class:`Malformed` for a broken structure."""
        for resource_entry in as_list(resource_metrics, RESOURCE_METRICS):
            resource = as_object(resource_entry, "a resourceMetrics entry")
            resource_node = resource.get("resource")
            resource_attrs = (
                attributes(as_object(resource_node, "resource").get("attributes")) if resource_node else {}
            )
            resource_key = json.dumps(resource_attrs, sort_keys=True, default=str)
            for scope_entry in as_list(resource.get("scopeMetrics"), "scopeMetrics"):
                scope = as_object(scope_entry, "a scopeMetrics entry")
                scope_node = scope.get("scope")
                scope_name = as_object(scope_node, "scope").get("name") if scope_node else None
                scope_name = scope_name if type(scope_name) is str else None
                for metric_entry in as_list(scope.get("metrics"), "metrics"):
                    metric = as_object(metric_entry, "a metric")
                    if metric.get("name") != names.FINDINGS_METRIC:
                        continue
                    total = metric.get("sum")
                    if total is None:
                        problem(f"{names.FINDINGS_METRIC} is not a sum; it was not summarised")
                        continue
                    total_node = as_object(total, "sum")
                    delta = total_node.get("aggregationTemporality") == TEMPORALITY_DELTA
                    for point_entry in as_list(total_node.get("dataPoints"), "dataPoints"):
                        self._point(as_object(point_entry, "a data point"), (resource_key, scope_name), delta)

    def _point(self, point: dict[str, object], origin: tuple[object, ...], delta: bool) -> None:
        self.points += 1
        attrs = attributes(point.get("attributes"))
        if "asInt" in point:
            value = int64(point["asInt"], "asInt") or 0
        else:
            as_double = double(point.get("asDouble", 0), "asDouble")
            value = int(as_double) if math.isfinite(as_double) else 0
        key: FindingCountKey = (
            str(attrs.get(names.METRIC_KIND, "")),
            str(attrs.get(names.METRIC_SEAM, "")),
            str(attrs.get(names.METRIC_TOOL, "")),
        )
        if delta:
            self._delta[key] = self._delta.get(key, 0) + value
            return
        started = point.get("startTimeUnixNano")  # part of the series' identity, as written
        series = (
            *origin,
            json.dumps(attrs, sort_keys=True, default=str),
            started if type(started) in (str, int) else json.dumps(started, default=str),
        )
        time = int64(point.get("timeUnixNano"), "timeUnixNano") or 0
        series_key = (*key, *series)
        previous = self._cumulative.get(series_key)
        if previous is None or time >= previous[0]:
            self._cumulative[series_key] = (time, value)

    def counts(self) -> dict[FindingCountKey, int]:
        """The latest total per (kind, seam, tool), sorted."""
        counts: dict[FindingCountKey, int] = dict(self._delta)
        for series_key, (_, value) in self._cumulative.items():
            key: FindingCountKey = (str(series_key[0]), str(series_key[1]), str(series_key[2]))
            counts[key] = counts.get(key, 0) + value
        return dict(sorted(counts.items()))
