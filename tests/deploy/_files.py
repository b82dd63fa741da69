"""Paths to the shipped deployment files, and loaders shared by the deployment tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "collector-config"
COMPOSE_FILE = REPO / "docker-compose.yml"
COLLECTOR_FILE = CONFIG / "otel-collector.yaml"
PROMETHEUS_FILE = CONFIG / "prometheus" / "prometheus.yml"
RULES_DIR = CONFIG / "prometheus" / "rules"
RULE_FILES = sorted(RULES_DIR.glob("*.rules.yml"))
RULE_TEST_FILES = sorted((CONFIG / "prometheus" / "tests").glob("*.test.yml"))
ALERTMANAGER_FILE = CONFIG / "alertmanager" / "alertmanager.yml"
TEMPO_FILE = CONFIG / "tempo" / "tempo.yaml"
DATASOURCES_FILE = CONFIG / "grafana" / "provisioning" / "datasources" / "datasources.yaml"
DASHBOARD_PROVIDERS_FILE = CONFIG / "grafana" / "provisioning" / "dashboards" / "dashboards.yaml"
DASHBOARD_FILES = sorted((CONFIG / "grafana" / "dashboards").glob("*.json"))


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def every_deployment_file() -> list[Path]:
    """Every text file an operator deploys: compose plus everything under collector-config/."""
    return [COMPOSE_FILE, *sorted(p for p in CONFIG.rglob("*") if p.is_file() and p.suffix != ".pyc")]
