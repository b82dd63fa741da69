"""The judge's scale-out topology, in compose and in the Kubernetes example, as the Collector runs it.

No Collector, Docker or Kubernetes runs on the project's machines, so these tests check what they
would consume. The laws under test:

- every component a Collector configuration names (compose's, and the Kubernetes example's) exists
  in otelcol-contrib at the release both pin, and the load-balancing exporter is given only keys it
  has (its ``Config`` at that release);
- layer 1 routes traces by ``traceID`` to the judge and nothing else; the judge's own spans come back
  on a receiver of their own, and content is stripped only after the judge, never before it;
- the addresses agree: the resolver's host and port are the judge's service and its gRPC listener,
  the judge's ``--forward`` is the collector's judged receiver, Prometheus scrapes the judge's
  ``--metrics`` port, and the health checks and probes ask ``/readyz`` and ``/healthz`` there;
- compose runs two replicas of an image built from this repository and tagged with its version; the
  Kubernetes example runs two behind a headless Service that the k8s resolver names, with the
  permissions that resolver needs; both give SIGTERM more time than the judge's shutdown bound;
- the judge's arguments are ones ``context-integrity serve`` accepts, and the contracts it mounts load.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from context_integrity.cli import parser
from context_integrity.contracts.file import load_contracts
from context_integrity.limits import SERVE_SHUTDOWN_SECONDS
from context_integrity.serve.receive import parse_address
from context_integrity.telemetry.schema import names

from ._files import (
    COLLECTOR_FILE,
    COMPOSE_FILE,
    K8S_COLLECTOR,
    K8S_SERVE,
    PROMETHEUS_FILE,
    REPO,
    SERVE_CONTRACTS,
    SERVE_DOCKERFILE,
    load_yaml,
    load_yaml_documents,
)

# The release compose and the Kubernetes example pin, and the module each component type we name comes
# from in it: read from distributions/otelcol-contrib/manifest.yaml at tag v0.115.0 of
# open-telemetry/opentelemetry-collector-releases (and each module's metadata.yaml for its type).
OTELCOL_CONTRIB = "0.115.0"
CORE = "go.opentelemetry.io/collector"
CONTRIB = "github.com/open-telemetry/opentelemetry-collector-contrib"
COMPONENTS: dict[str, dict[str, str]] = {
    "receivers": {"otlp": f"{CORE}/receiver/otlpreceiver"},
    "processors": {
        "memory_limiter": f"{CORE}/processor/memorylimiterprocessor",
        "batch": f"{CORE}/processor/batchprocessor",
        "transform": f"{CONTRIB}/processor/transformprocessor",
    },
    "exporters": {
        "otlp": f"{CORE}/exporter/otlpexporter",
        "debug": f"{CORE}/exporter/debugexporter",
        "prometheus": f"{CONTRIB}/exporter/prometheusexporter",
        "loadbalancing": f"{CONTRIB}/exporter/loadbalancingexporter",
    },
    "extensions": {"health_check": f"{CONTRIB}/extension/healthcheckextension"},
}
# The load-balancing exporter's configuration at that release (exporter/loadbalancingexporter/config.go:
# Config, ResolverSettings and its resolvers; the timeout is squashed in, the otlp block is the OTLP
# exporter's own).
LOADBALANCING_KEYS = {"timeout", "retry_on_failure", "sending_queue", "protocol", "resolver", "routing_key"}
RESOLVER_KEYS = {
    "static": {"hostnames"},
    "dns": {"hostname", "port", "interval", "timeout"},
    "k8s": {"service", "ports", "timeout", "return_hostnames"},
    "aws_cloud_map": {"namespace", "service_name", "health_status", "interval", "timeout", "port"},
}
ROUTING_KEYS = {"service", "traceID", "metric", "resource", "streamID"}


def serve_arguments(arguments: list[str]) -> Any:
    """The judge's arguments, read by ``context-integrity serve``'s own parser."""
    return parser().parse_args(["serve", *arguments])


def k8s(path: Path, kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d
        for d in load_yaml_documents(path)
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, (path.name, kind, name)
    document: dict[str, Any] = found[0]
    return document


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return load_yaml(COMPOSE_FILE)["services"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def judge(services: dict[str, Any]) -> Any:
    return serve_arguments(services["judge"]["command"])


@pytest.fixture(scope="module")
def k8s_judge() -> Any:
    container = k8s(K8S_SERVE, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return serve_arguments(container["args"])


def collectors() -> dict[str, dict[str, Any]]:
    """Every Collector configuration shipped: compose's file and the Kubernetes example's ConfigMap."""
    configmap = k8s(K8S_COLLECTOR, "ConfigMap")
    import yaml

    return {
        COLLECTOR_FILE.name: load_yaml(COLLECTOR_FILE),
        K8S_COLLECTOR.name: yaml.safe_load(configmap["data"]["config.yaml"]),
    }


def loadbalancing(config: dict[str, Any]) -> dict[str, Any]:
    found = [spec for key, spec in config["exporters"].items() if key.split("/")[0] == "loadbalancing"]
    assert len(found) == 1
    return found[0]  # type: ignore[no-any-return]


# ── the components ───────────────────────────────────────────────────────


@pytest.mark.parametrize("where", sorted(collectors()))
def test_every_component_is_one_otelcol_contrib_has_at_the_pinned_release(where: str) -> None:
    config = collectors()[where]
    for section, known in COMPONENTS.items():
        for component in config.get(section) or {}:
            assert component.split("/")[0] in known, (
                f"{where}: {section} {component!r} is not in otelcol-contrib"
            )


def test_compose_and_kubernetes_pin_that_release(services: dict[str, Any]) -> None:
    images = [services["collector"]["image"]]
    images += [c["image"] for c in k8s(K8S_COLLECTOR, "Deployment")["spec"]["template"]["spec"]["containers"]]
    assert images and all(
        image == f"otel/opentelemetry-collector-contrib:{OTELCOL_CONTRIB}" for image in images
    )


@pytest.mark.parametrize("where", sorted(collectors()))
def test_the_load_balancing_exporter_routes_by_trace_id_with_keys_it_has(where: str) -> None:
    spec = loadbalancing(collectors()[where])
    assert set(spec) <= LOADBALANCING_KEYS
    assert spec["routing_key"] == "traceID" and spec["routing_key"] in ROUTING_KEYS
    assert set(spec["protocol"]) == {"otlp"} and "endpoint" not in spec["protocol"]["otlp"]
    (resolver,) = spec["resolver"].items()
    assert set(resolver[1]) <= RESOLVER_KEYS[resolver[0]]


@pytest.mark.parametrize("where", sorted(collectors()))
def test_layer_one_sends_traces_only_to_the_judge_and_content_is_stripped_only_after_it(where: str) -> None:
    config = collectors()[where]
    pipelines = config["service"]["pipelines"]
    first = pipelines["traces"]
    assert first["exporters"] == [next(k for k in config["exporters"] if k.split("/")[0] == "loadbalancing")]
    assert not any(p.split("/")[0] == "transform" for p in first["processors"])  # the judge reads content
    (judged,) = [
        spec for name, spec in pipelines.items() if name != "traces" and name.split("/")[0] == "traces"
    ]
    assert set(judged["receivers"]).isdisjoint(first["receivers"])  # the judge's spans come back apart
    (strip,) = [p for p in judged["processors"] if p.split("/")[0] == "transform"]
    deleted = set(re.findall(r'delete_key\(attributes, "([^"]+)"\)', str(config["processors"][strip])))
    assert deleted == set(names.CONTENT_ATTRIBUTES)


# ── the addresses ────────────────────────────────────────────────────────


def _expose(service: dict[str, Any]) -> set[int]:
    return {int(port) for port in service.get("expose", [])}


def _receiver_port(config: dict[str, Any], pipeline: str) -> set[int]:
    ports = set()
    for receiver in config["service"]["pipelines"][pipeline]["receivers"]:
        for protocol in config["receivers"][receiver]["protocols"].values():
            ports.add(int(protocol["endpoint"].rsplit(":", 1)[1]))
    return ports


def _judged_pipeline(config: dict[str, Any]) -> str:
    pipelines: dict[str, Any] = config["service"]["pipelines"]
    return next(n for n in pipelines if n != "traces" and n.split("/")[0] == "traces")


def test_compose_addresses_agree(services: dict[str, Any], judge: Any) -> None:
    config = load_yaml(COLLECTOR_FILE)
    dns = loadbalancing(config)["resolver"]["dns"]
    assert dns["hostname"] == "judge"
    assert int(dns["port"]) == parse_address(judge.listen_grpc, "--listen-grpc")[1]
    assert int(dns["port"]) in _expose(services["judge"])
    forward = urlsplit(judge.forward)
    assert forward.scheme == "grpc" and forward.hostname == "collector"
    assert forward.port in _receiver_port(config, _judged_pipeline(config))
    assert forward.port in _expose(services["collector"])
    metrics_port = parse_address(judge.metrics, "--metrics")[1]
    assert metrics_port in _expose(services["judge"])
    assert f"127.0.0.1:{metrics_port}/readyz" in str(services["judge"]["healthcheck"]["test"])
    prometheus = load_yaml(PROMETHEUS_FILE)
    scraped = [d for job in prometheus["scrape_configs"] for d in job.get("dns_sd_configs", [])]
    assert {(name, d["port"]) for d in scraped for name in d["names"]} == {("judge", metrics_port)}


def test_kubernetes_addresses_agree(k8s_judge: Any) -> None:
    config = collectors()[K8S_COLLECTOR.name]
    resolver = loadbalancing(config)["resolver"]["k8s"]
    service = k8s(K8S_SERVE, "Service")
    deployment = k8s(K8S_SERVE, "Deployment")
    namespace = service["metadata"]["namespace"]
    assert resolver["service"] == f"{service['metadata']['name']}.{namespace}"
    grpc_port = parse_address(k8s_judge.listen_grpc, "--listen-grpc")[1]
    assert resolver["ports"] == [grpc_port]
    assert grpc_port in {p["port"] for p in service["spec"]["ports"]}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert grpc_port in {p["containerPort"] for p in container["ports"]}
    forward = urlsplit(k8s_judge.forward)
    collector_service = k8s(K8S_COLLECTOR, "Service")
    assert (
        forward.hostname
        == f"{collector_service['metadata']['name']}.{collector_service['metadata']['namespace']}"
    )
    assert forward.port in _receiver_port(config, _judged_pipeline(config))
    assert forward.port in {p["port"] for p in collector_service["spec"]["ports"]}
    metrics_port = parse_address(k8s_judge.metrics, "--metrics")[1]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": metrics_port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": metrics_port}


# ── the replicas ─────────────────────────────────────────────────────────


def test_compose_runs_two_replicas_of_this_repositorys_image(services: dict[str, Any], judge: Any) -> None:
    service = services["judge"]
    assert service["deploy"]["replicas"] == 2
    assert (REPO / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == SERVE_DOCKERFILE
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert service["image"] == f"context-integrity-serve:{version}"
    assert _seconds(service["stop_grace_period"]) > SERVE_SHUTDOWN_SECONDS
    mounted = {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
    assert load_contracts(REPO / mounted[judge.contracts]).tools


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+)s", text)
    assert match, text
    return float(match[1])


def test_the_image_is_built_from_this_checkout_with_the_serve_extra() -> None:
    text = SERVE_DOCKERFILE.read_text()
    (base,) = re.findall(r"^FROM (\S+)$", text, re.M)
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim", base)
    assert '".[serve]"' in text
    assert 'ENTRYPOINT ["context-integrity", "serve"]' in text
    exposed = {int(p) for p in re.findall(r"^EXPOSE (.+)$", text, re.M)[0].split()}
    assert exposed == {4317, 4318, 9464}


def test_kubernetes_runs_two_replicas_behind_a_headless_service_the_resolver_may_read(k8s_judge: Any) -> None:
    deployment = k8s(K8S_SERVE, "Deployment")
    service = k8s(K8S_SERVE, "Service")
    assert deployment["spec"]["replicas"] >= 2
    assert service["spec"]["clusterIP"] == "None"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > SERVE_SHUTDOWN_SECONDS
    role = k8s(K8S_COLLECTOR, "Role")
    granted = {
        (group, resource)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        if {"get", "list", "watch"} <= set(rule["verbs"])
    }
    assert {("", "endpoints"), ("discovery.k8s.io", "endpointslices")} <= granted
    binding = k8s(K8S_COLLECTOR, "RoleBinding")
    account = k8s(K8S_COLLECTOR, "ServiceAccount")["metadata"]["name"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert [s["name"] for s in binding["subjects"]] == [account]
    collector = k8s(K8S_COLLECTOR, "Deployment")["spec"]["template"]["spec"]
    assert collector["serviceAccountName"] == account
    contracts = k8s(K8S_SERVE, "ConfigMap")["data"][Path(k8s_judge.contracts).name]
    assert tomllib.loads(contracts)["tools"]


def test_the_example_contracts_load() -> None:
    assert {tool.name for tool in load_contracts(SERVE_CONTRACTS).tools}
