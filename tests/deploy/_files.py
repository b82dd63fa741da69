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
# The judge (`context-integrity serve`): its image, its example contracts, its Kubernetes example.
DEPLOY = REPO / "deploy"
SERVE_DOCKERFILE = DEPLOY / "serve.Dockerfile"
SERVE_CONTRACTS = DEPLOY / "contracts.toml"
K8S_SERVE = DEPLOY / "k8s" / "serve.yaml"
K8S_COLLECTOR = DEPLOY / "k8s" / "collector.yaml"


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def load_yaml_documents(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [document for document in yaml.safe_load_all(handle) if document is not None]


def every_deployment_file() -> list[Path]:
    """Every text file an operator deploys: compose, everything under collector-config/ and deploy/."""
    return [
        COMPOSE_FILE,
        *sorted(
            p for root in (CONFIG, DEPLOY) for p in root.rglob("*") if p.is_file() and p.suffix != ".pyc"
        ),
    ]
