"""The library's findings counter reaches a real Prometheus, and the shipped alert pages through Alertmanager.

Prometheus and Alertmanager are Debian's packages, started by the test on free loopback ports with
the SHIPPED rule file and the SHIPPED Alertmanager routing (only the webhook address is swapped
for a receiver the test runs). The agent is a separate process configured only through the
standard environment (``OTEL_METRICS_EXPORTER=prometheus``) that stays up so it can be scraped.
Prometheus scrapes and evaluates every second so the proof takes seconds, not minutes.

The laws under test:

- a warn-mode run of the demo agent puts ``context_integrity_findings_total`` series into
  Prometheus, labelled with the kind and tool of each finding;
- the shipped ``column-type-mismatch`` alert fires on that brand-new series and Alertmanager
  delivers it to the webhook with the service, tool and kind labels;
- a clean run (only the tool whose well-typed result passes) fires nothing: Prometheus scraped
  the agent's metrics endpoint and evaluated the rules many times after that, and no alert is
  pending or firing, none reached Alertmanager and none reached the webhook.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from context_integrity import demo
from context_integrity.telemetry.schema import names

from ._services import (
    REPO,
    Service,
    WebhookReceiver,
    free_port,
    http_get,
    http_json,
    library_env,
    require_executable,
    wait_until,
)

pytestmark = pytest.mark.live

AGENT_SCRIPT = Path(__file__).with_name("_metrics_agent.py")
ALERTMANAGER_FILE = REPO / "collector-config" / "alertmanager" / "alertmanager.yml"
RULE_FILES = sorted((REPO / "collector-config" / "prometheus" / "rules").glob("*.rules.yml"))
SERVICE_NAME = "storage-triage-ci"
SCRAPE_JOB = "agent"
START_TIMEOUT_S = 60
ALERT_TIMEOUT_S = 120
# Evaluation cycles a clean run must survive after Prometheus has scraped it.
QUIET_EVALUATIONS = 15
QUIET_TIMEOUT_S = 120
COLUMN_TYPE_ALERT = "ContextIntegrityColumnTypeMismatch"
COLUMN_TYPE_MISMATCH = "column-type-mismatch"
MAPPINGS_TOOL = demo.host_group_mappings.__name__
QUOTED_NUMBERS_TOOL = demo.port_counters.__name__
SERVICE_LABEL = "service_name"


@dataclass
class Stack:
    prometheus: Service
    prometheus_url: str
    alertmanager: Service
    alertmanager_url: str
    agent: Service
    webhook: WebhookReceiver

    def logs(self) -> str:
        return self.agent.log_tail() + self.prometheus.log_tail() + self.alertmanager.log_tail()

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.prometheus_url}/api/v1/query?query={urllib.parse.quote(promql)}"
        answer = http_json(url)
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def prometheus_alerts(self) -> list[dict[str, Any]]:
        return list(http_json(f"{self.prometheus_url}/api/v1/alerts")["data"]["alerts"])

    def alertmanager_alerts(self) -> list[dict[str, Any]]:
        return list(http_json(f"{self.alertmanager_url}/api/v2/alerts"))

    def rule_group_iterations(self) -> float:
        """How many times Prometheus has evaluated the shipped rule groups (its own counter)."""
        status, body = http_get(f"{self.prometheus_url}/metrics")
        assert status == 200
        total = 0.0
        for line in body.decode().splitlines():
            if line.startswith("prometheus_rule_group_iterations_total{") and "context-integrity" in line:
                total += float(line.rsplit(" ", 1)[1])
        return total


def _alertmanager_config(tmp: Path, webhook_url: str) -> Path:
    """The shipped routing, with only the webhook address pointed at the test's receiver."""
    config = yaml.safe_load(ALERTMANAGER_FILE.read_text())
    hooks = [hook for receiver in config["receivers"] for hook in receiver.get("webhook_configs", [])]
    assert hooks, "the shipped config routes to a webhook"
    for hook in hooks:
        hook["url"] = webhook_url
    path = tmp / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def _prometheus_config(tmp: Path, agent_port: int, alertmanager_port: int) -> Path:
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in RULE_FILES],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]}]
        },
        "scrape_configs": [
            {
                "job_name": SCRAPE_JOB,
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{agent_port}"],
                        # Scraping an agent directly (no collector), service.name reaches
                        # Prometheus only on target_info; the rules group by service_name, so
                        # the scrape config names the service, as docs/deploy/alerting.md tells operators.
                        "labels": {SERVICE_LABEL: SERVICE_NAME},
                    }
                ],
            }
        ],
    }
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def _start_stack(tmp: Path, mode: str, webhook: WebhookReceiver) -> Stack:
    prometheus_bin = require_executable("prometheus", "the Debian prometheus package")
    alertmanager_bin = require_executable(
        "prometheus-alertmanager", "the Debian prometheus-alertmanager package"
    )
    agent_port, prometheus_port, alertmanager_port = free_port(), free_port(), free_port()

    alertmanager = Service(
        name="alertmanager",
        argv=[
            alertmanager_bin,
            f"--config.file={_alertmanager_config(tmp, webhook.url)}",
            f"--storage.path={tmp / 'alertmanager-data'}",
            f"--web.listen-address=127.0.0.1:{alertmanager_port}",
            # No cluster: it would otherwise listen for peers on every interface.
            "--cluster.listen-address=",
        ],
        workdir=tmp / "alertmanager",
    ).start()
    agent = Service(
        name="agent",
        argv=[sys.executable, str(AGENT_SCRIPT), mode],
        workdir=tmp / "agent",
        env=library_env(
            OTEL_SERVICE_NAME=SERVICE_NAME,
            OTEL_TRACES_EXPORTER="none",
            OTEL_METRICS_EXPORTER="prometheus",
            OTEL_EXPORTER_PROMETHEUS_HOST="127.0.0.1",
            OTEL_EXPORTER_PROMETHEUS_PORT=str(agent_port),
        ),
    ).start()
    prometheus = Service(
        name="prometheus",
        argv=[
            prometheus_bin,
            f"--config.file={_prometheus_config(tmp, agent_port, alertmanager_port)}",
            f"--storage.tsdb.path={tmp / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}",
        ],
        workdir=tmp / "prometheus",
    ).start()
    stack = Stack(
        prometheus=prometheus,
        prometheus_url=f"http://127.0.0.1:{prometheus_port}",
        alertmanager=alertmanager,
        alertmanager_url=f"http://127.0.0.1:{alertmanager_port}",
        agent=agent,
        webhook=webhook,
    )
    alertmanager.wait_http(f"{stack.alertmanager_url}/-/ready", timeout_s=START_TIMEOUT_S)
    prometheus.wait_http(f"{stack.prometheus_url}/-/ready", timeout_s=START_TIMEOUT_S)
    wait_until(
        lambda: "READY" in agent.log_path.read_text(errors="replace"),
        timeout_s=START_TIMEOUT_S,
        what="the agent's run to finish",
        log=agent.log_tail(),
    )
    return stack


@pytest.fixture
def stack_for(tmp_path: Path) -> Iterator[Any]:
    started: list[Stack] = []

    def start(mode: str) -> Stack:
        webhook = WebhookReceiver().__enter__()
        try:
            stack = _start_stack(tmp_path, mode, webhook)
        except BaseException:
            webhook.__exit__()
            raise
        started.append(stack)
        return stack

    try:
        yield start
    finally:
        for stack in started:
            for service in (stack.agent, stack.prometheus, stack.alertmanager):
                service.stop()
            stack.webhook.__exit__()


def _by_tool(series: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {s["metric"][names.METRIC_TOOL]: s["metric"] for s in series}


def test_a_column_type_mismatch_run_reaches_prometheus_and_pages_the_webhook(stack_for: Any) -> None:
    stack: Stack = stack_for("mismatch")

    series = wait_until(
        lambda: stack.query(names.PROMETHEUS_FINDINGS_METRIC) or None,
        timeout_s=ALERT_TIMEOUT_S,
        what=f"{names.PROMETHEUS_FINDINGS_METRIC} in Prometheus",
        log=stack.logs(),
    )
    labelled = _by_tool(series)
    assert set(labelled) == {MAPPINGS_TOOL, QUOTED_NUMBERS_TOOL}
    for labels in labelled.values():
        assert labels[names.METRIC_KIND] == COLUMN_TYPE_MISMATCH
        assert labels[names.METRIC_SEAM] == "write"
        assert labels[names.METRIC_ADVISORY] == "false"
        assert labels[SERVICE_LABEL] == SERVICE_NAME

    def paged() -> list[dict[str, Any]] | None:
        pages = [
            a
            for a in stack.webhook.alerts()
            if a["labels"]["alertname"] == COLUMN_TYPE_ALERT and a["status"] == "firing"
        ]
        return pages if {a["labels"][names.METRIC_TOOL] for a in pages} >= {MAPPINGS_TOOL} else None

    pages = wait_until(
        paged,
        timeout_s=ALERT_TIMEOUT_S,
        what=f"{COLUMN_TYPE_ALERT} for {MAPPINGS_TOOL} at the webhook",
        log=f"\nPrometheus alerts: {stack.prometheus_alerts()}" + stack.logs(),
    )
    page = next(a for a in pages if a["labels"][names.METRIC_TOOL] == MAPPINGS_TOOL)
    assert page["labels"][names.METRIC_KIND] == COLUMN_TYPE_MISMATCH
    assert page["labels"][SERVICE_LABEL] == SERVICE_NAME
    assert page["labels"]["severity"] == "page"
    assert MAPPINGS_TOOL in page["annotations"]["summary"]
    assert re.match(r"\d+ column-type-mismatch finding", page["annotations"]["description"])


def test_a_clean_run_fires_nothing(stack_for: Any) -> None:
    stack: Stack = stack_for("clean")

    # Prometheus really read the agent's metrics endpoint (the library's process, by its
    # target_info), so "no findings series" means the run had none, not that nothing was scraped.
    wait_until(
        lambda: (
            stack.query(f'up{{job="{SCRAPE_JOB}"}} == 1')
            and stack.query(f'target_info{{job="{SCRAPE_JOB}"}}')
        ),
        timeout_s=START_TIMEOUT_S,
        what="Prometheus to scrape the clean agent",
        log=stack.logs(),
    )
    assert "READY findings=0" in stack.agent.log_path.read_text()
    scraped_at = stack.rule_group_iterations()
    wait_until(
        lambda: stack.rule_group_iterations() >= scraped_at + QUIET_EVALUATIONS,
        timeout_s=QUIET_TIMEOUT_S,
        what=f"{QUIET_EVALUATIONS} rule evaluations after the scrape",
        log=stack.logs(),
    )
    assert stack.query(names.PROMETHEUS_FINDINGS_METRIC) == []
    assert stack.prometheus_alerts() == []
    assert stack.alertmanager_alerts() == []
    assert stack.webhook.notifications == []
