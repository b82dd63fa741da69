"""The deployment files agree with each other and with the names the library really emits.

None of the collector, Jaeger, Tempo or Grafana can run on the project's machines, so these tests
check what those programs consume. Every expected name is read from
``context_integrity.telemetry.schema.names`` (or ``findings.KINDS``), never retyped.

The laws under test:

- Collector: every component a pipeline names is defined, every defined component is used; the
  memory limiter runs first and batching last; the content processor deletes every
  ``names.CONTENT_ATTRIBUTES`` key from spans, span events and log records, sits in every pipeline
  that stores traces (after the judge, which reads content) and in the logs pipeline, and is switched
  by the environment variable the compose file passes.
- Addresses: every host:port that one file points at is a compose service that exposes that port;
  every port a component listens on is exposed by its service; every health check probes its own
  service's port.
- Compose: every image is pinned to a release (no ``latest``); every long-running service has a
  health check; every mounted file exists; every config path a command names is mounted.
- Names: every Prometheus metric in rules, dashboards and data sources is
  ``names.PROMETHEUS_FINDINGS_METRIC`` (or Tempo's span-metrics series, whose tool label comes from
  ``names.GEN_AI_TOOL_NAME`` through tempo.yaml); every label is one the counter carries; every
  kind value is a real kind; every ``context_integrity.*`` name written anywhere in the deployment
  is one the library emits.
- Alerting: one alert pages on ``column-type-mismatch`` by service and tool, one fires on any
  kind; both carry the brand-new-series branch; every rule has promtool tests that expect it to
  fire and expect it not to; Alertmanager routes to a webhook and groups by labels the rules keep.
- Grafana: every data source a dashboard or cross-link uses is provisioned; the dashboard charts
  the counter by kind and tool, selects spans with ``findings.count > 0`` and links to traces.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
from opentelemetry.sdk.resources import SERVICE_NAME

from context_integrity.findings import KINDS
from context_integrity.telemetry.schema import names

from ._files import (
    ALERTMANAGER_FILE,
    COLLECTOR_FILE,
    COMPOSE_FILE,
    DASHBOARD_FILES,
    DASHBOARD_PROVIDERS_FILE,
    DATASOURCES_FILE,
    PROMETHEUS_FILE,
    REPO,
    RULE_FILES,
    RULE_TEST_FILES,
    RULES_DIR,
    TEMPO_FILE,
    every_deployment_file,
    load_json,
    load_yaml,
)

# ── Names derived from the library, in the form each backend shows them ──────────────────────


def prometheus_label(otel_attribute: str) -> str:
    """How an attribute becomes a Prometheus label (collector exporter, Tempo generator)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", otel_attribute)


# service.name, turned into a label by the collector's resource_to_telemetry_conversion.
SERVICE_LABEL = prometheus_label(SERVICE_NAME)
FINDINGS_METRIC_LABELS = frozenset(
    {names.METRIC_KIND, names.METRIC_SEAM, names.METRIC_TOOL, names.METRIC_ADVISORY, SERVICE_LABEL}
)
# Labels Prometheus itself adds to every scraped series.
PROMETHEUS_TARGET_LABELS = frozenset({"job", "instance", "__name__"})
# Tempo's span-metrics processor: calls per span, with each configured dimension as a label.
TEMPO_SPANMETRICS_CALLS = "traces_spanmetrics_calls_total"
TEMPO_SPAN_METRICS_PROCESSOR = "span-metrics"


def emitted_dotted_names() -> frozenset[str]:
    """Every ``context_integrity.*`` / ``gen_ai.*`` string constant in the names module."""
    return frozenset(
        value
        for key, value in vars(names).items()
        if key.isupper() and isinstance(value, str) and "." in value
    )


def is_emitted_name(candidate: str) -> bool:
    if candidate in emitted_dotted_names():
        return True
    # Parametrised families: context_integrity.witness.<i>.<field>, .totals.<f>, .row.<...>.
    witness = re.fullmatch(re.escape(names.WITNESS_PREFIX) + r"\.(\d+)\.(\w+)", candidate)
    if witness:
        return candidate == names.witness_attribute(int(witness[1]), witness[2]) and (
            witness[2] in names.WITNESS_FIELDS
        )
    return candidate.startswith((names.TOTALS_PREFIX + ".", names.ROW_PREFIX + "."))


# ── A small PromQL reader: enough to list metric names and labels in our own expressions ─────

_PROMQL_WORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})


def promql_metric_names(expr: str) -> set[str]:
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\boffset\s+\S+", " ", text)
    found = set()
    for match in re.finditer(r"(\$?[A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", text):
        word, is_call = match[1], match[2]
        if is_call or word.startswith("$") or word.lower() in _PROMQL_WORDS:
            continue
        found.add(word)
    return found


def promql_selectors(expr: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(metric, {label: value}) for each ``metric{...}`` selector with literal matchers."""
    for match in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}", expr):
        matchers = dict(re.findall(r'(\w+)\s*(?:=~|!~|!=|=)\s*"([^"]*)"', match[2]))
        yield match[1], matchers


def promql_grouping_labels(expr: str) -> set[str]:
    labels: set[str] = set()
    for group in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        labels.update(label.strip() for label in group.split(",") if label.strip())
    return labels


def assert_promql_uses_library_names(expr: str, where: str) -> None:
    metrics = promql_metric_names(expr)
    assert metrics, f"{where}: no metric found in {expr!r}"
    assert metrics <= {names.PROMETHEUS_FINDINGS_METRIC, TEMPO_SPANMETRICS_CALLS}, (where, metrics)
    allowed = {
        names.PROMETHEUS_FINDINGS_METRIC: FINDINGS_METRIC_LABELS | PROMETHEUS_TARGET_LABELS,
        TEMPO_SPANMETRICS_CALLS: {prometheus_label(d) for d in tempo_span_metric_dimensions()}
        | PROMETHEUS_TARGET_LABELS,
    }
    for metric, matchers in promql_selectors(expr):
        assert set(matchers) <= allowed[metric], (where, metric, matchers)
        if names.METRIC_KIND in matchers and metric == names.PROMETHEUS_FINDINGS_METRIC:
            assert matchers[names.METRIC_KIND] in KINDS, (where, matchers)
    union = set().union(*(allowed[m] for m in metrics))
    assert promql_grouping_labels(expr) <= union, (where, promql_grouping_labels(expr))


# ── Loaded files ─────────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE_FILE)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def collector() -> dict[str, Any]:
    return load_yaml(COLLECTOR_FILE)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def rules() -> list[dict[str, Any]]:
    return [rule for path in RULE_FILES for group in load_yaml(path)["groups"] for rule in group["rules"]]


@pytest.fixture(scope="module")
def alerts(rules: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in rules if "alert" in rule}


@pytest.fixture(scope="module")
def datasources() -> list[dict[str, Any]]:
    return load_yaml(DATASOURCES_FILE)["datasources"]  # type: ignore[no-any-return]


def tempo_span_metric_dimensions() -> list[str]:
    tempo = load_yaml(TEMPO_FILE)
    return list(tempo["metrics_generator"]["processor"]["span_metrics"]["dimensions"])


def exposed_ports(service: dict[str, Any]) -> set[int]:
    ports = {int(p) for p in service.get("expose", [])}
    for mapping in service.get("ports", []):
        ports.add(int(str(mapping).split(":")[-1].split("/")[0]))
    return ports


def host_port(address: str) -> tuple[str, int]:
    if "://" in address:
        parsed = urlparse(address)
        assert parsed.hostname and parsed.port, address
        return parsed.hostname, parsed.port
    host, _, port = address.rpartition(":")
    return host, int(port)


def component_ids(collector: dict[str, Any], section: str) -> set[str]:
    return set(collector.get(section) or {})


# ── Collector ────────────────────────────────────────────────────────────────────────────────


def test_every_pipeline_component_is_defined_and_every_defined_component_is_used(
    collector: dict[str, Any],
) -> None:
    service = collector["service"]
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    for pipeline, spec in service["pipelines"].items():
        for section in used:
            listed = spec.get(section, [])
            assert len(listed) == len(set(listed)), f"{pipeline} lists a {section[:-1]} twice"
            missing = set(listed) - component_ids(collector, section)
            assert not missing, f"pipeline {pipeline} names undefined {section}: {missing}"
            used[section].update(listed)
    for section, ids in used.items():
        assert component_ids(collector, section) == ids, f"defined but unused {section}"
    assert set(service.get("extensions", [])) == component_ids(collector, "extensions")


def test_memory_limiter_runs_first_and_batch_last_in_every_pipeline(collector: dict[str, Any]) -> None:
    for pipeline, spec in collector["service"]["pipelines"].items():
        processors = spec["processors"]
        assert processors[0] == "memory_limiter", pipeline
        assert processors[-1] == "batch", pipeline


def test_the_pipelines_send_traces_to_jaeger_and_tempo_and_metrics_to_prometheus(
    collector: dict[str, Any],
) -> None:
    pipelines = collector["service"]["pipelines"]
    trace_targets = {
        host_port(collector["exporters"][e]["endpoint"])[0] for e in storing_exporters(collector)
    }
    assert trace_targets == {"jaeger", "tempo"}
    assert [e.split("/")[0] for e in pipelines["metrics"]["exporters"]] == ["prometheus"]
    prometheus_exporter = collector["exporters"]["prometheus"]
    # service.name must reach the alert rules as a label.
    assert prometheus_exporter["resource_to_telemetry_conversion"]["enabled"] is True


def storing_pipelines(collector: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The trace pipelines that send traces to storage (an exporter with an endpoint): not the
    load-balancing layer in front of the judge, which sends them on to be judged."""
    return {
        name: spec
        for name, spec in collector["service"]["pipelines"].items()
        if name.split("/")[0] == "traces"
        and any("endpoint" in (collector["exporters"][e] or {}) for e in spec["exporters"])
    }


def storing_exporters(collector: dict[str, Any]) -> list[str]:
    return [e for spec in storing_pipelines(collector).values() for e in spec["exporters"]]


def _content_processor(collector: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    candidates = [
        (pid, spec)
        for pid, spec in collector["processors"].items()
        if pid.split("/")[0] == "transform" and names.GEN_AI_TOOL_CALL_RESULT in str(spec)
    ]
    assert len(candidates) == 1, "exactly one transform processor strips content"
    return candidates[0]


@pytest.mark.parametrize(
    ("statements_key", "context"),
    [("trace_statements", "span"), ("trace_statements", "spanevent"), ("log_statements", "log")],
)
def test_the_content_processor_deletes_every_content_attribute(
    collector: dict[str, Any], statements_key: str, context: str
) -> None:
    _, spec = _content_processor(collector)
    blocks = [b for b in spec[statements_key] if b["context"] == context]
    assert len(blocks) == 1, f"one {context} block"
    deleted = {
        m[1]
        for statement in blocks[0]["statements"]
        if (m := re.match(r'delete_key\(attributes, "([^"]+)"\)', statement))
    }
    assert deleted == set(names.CONTENT_ATTRIBUTES)


def test_the_content_processor_guards_traces_and_logs_and_is_switched_by_compose(
    collector: dict[str, Any], services: dict[str, Any]
) -> None:
    processor_id, spec = _content_processor(collector)
    pipelines = collector["service"]["pipelines"]
    stored = storing_pipelines(collector)
    assert stored and all(processor_id in each["processors"] for each in stored.values())
    assert processor_id in pipelines["logs"]["processors"]
    toggles = set(re.findall(r"\$\{env:(\w+):-false\}", str(spec)))
    assert len(toggles) == 1, toggles
    (toggle,) = toggles
    collector_service = next(s for s in services.values() if str(s["image"]).startswith("otel/"))
    assert toggle in collector_service["environment"]


def test_every_port_the_collector_listens_on_is_exposed(
    collector: dict[str, Any], services: dict[str, Any]
) -> None:
    listening = {
        host_port(p["endpoint"])[1]
        for receiver_id, receiver in collector["receivers"].items()
        if receiver_id.split("/")[0] == "otlp"
        for p in receiver["protocols"].values()
    }
    listening.add(host_port(collector["exporters"]["prometheus"]["endpoint"])[1])
    listening |= {host_port(e["endpoint"])[1] for e in collector["extensions"].values()}
    assert listening <= exposed_ports(services["collector"])
    # Agents on the host reach OTLP on the standard ports.
    assert {4317, 4318} <= {int(str(p).split(":")[0]) for p in services["collector"]["ports"]}


# ── Addresses across files ───────────────────────────────────────────────────────────────────


def referenced_addresses(
    collector: dict[str, Any], datasources: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """(file, address) for every address one component uses to reach another."""
    found: list[tuple[str, str]] = []
    for exporter in collector["exporters"].values():
        endpoint = (exporter or {}).get("endpoint", "")
        if endpoint and not endpoint.startswith("0.0.0.0"):  # 0.0.0.0: a listening exporter
            found.append((COLLECTOR_FILE.name, endpoint))
    for exporter_id, exporter in collector["exporters"].items():
        dns = (
            (exporter or {}).get("resolver", {}).get("dns")
            if exporter_id.split("/")[0] == "loadbalancing"
            else None
        )
        if dns:  # the load-balancing exporter reaches every replica behind one name
            found.append((COLLECTOR_FILE.name, f"{dns['hostname']}:{dns['port']}"))
    prometheus = load_yaml(PROMETHEUS_FILE)
    for job in prometheus["scrape_configs"]:
        for static in job.get("static_configs", []):
            found.extend((PROMETHEUS_FILE.name, t) for t in static["targets"])
        for discovered in job.get("dns_sd_configs", []):
            found.extend(
                (PROMETHEUS_FILE.name, f"{name}:{discovered['port']}") for name in discovered["names"]
            )
    for am in prometheus["alerting"]["alertmanagers"]:
        for static in am["static_configs"]:
            found.extend((PROMETHEUS_FILE.name, t) for t in static["targets"])
    tempo = load_yaml(TEMPO_FILE)
    found.extend((TEMPO_FILE.name, rw["url"]) for rw in tempo["metrics_generator"]["storage"]["remote_write"])
    found.extend((DATASOURCES_FILE.name, ds["url"]) for ds in datasources)
    alertmanager = load_yaml(ALERTMANAGER_FILE)
    for receiver in alertmanager["receivers"]:
        found.extend((ALERTMANAGER_FILE.name, hook["url"]) for hook in receiver.get("webhook_configs", []))
    return found


def test_every_address_is_a_compose_service_exposing_that_port(
    collector: dict[str, Any], datasources: list[dict[str, Any]], services: dict[str, Any]
) -> None:
    addresses = referenced_addresses(collector, datasources)
    assert len(addresses) >= 8
    for source, address in addresses:
        host, port = host_port(address)
        if host == "localhost":  # Prometheus scraping itself
            assert source == PROMETHEUS_FILE.name and port in exposed_ports(services["prometheus"])
            continue
        assert host in services, f"{source}: {address} names no compose service"
        assert port in exposed_ports(services[host]), f"{source}: {host} does not expose {port}"


def test_tempo_listens_where_the_collector_and_grafana_reach_it(services: dict[str, Any]) -> None:
    tempo = load_yaml(TEMPO_FILE)
    ports = {tempo["server"]["http_listen_port"]}
    ports |= {
        host_port(p["endpoint"])[1] for p in tempo["distributor"]["receivers"]["otlp"]["protocols"].values()
    }
    assert ports <= exposed_ports(services["tempo"])


def test_prometheus_accepts_tempos_remote_write(services: dict[str, Any]) -> None:
    tempo = load_yaml(TEMPO_FILE)
    assert tempo["metrics_generator"]["storage"]["remote_write"]
    assert "--web.enable-remote-write-receiver" in services["prometheus"]["command"]
    enabled = tempo["overrides"]["defaults"]["metrics_generator"]["processors"]
    assert TEMPO_SPAN_METRICS_PROCESSOR in enabled
    assert names.GEN_AI_TOOL_NAME in tempo_span_metric_dimensions()


# ── Compose ──────────────────────────────────────────────────────────────────────────────────


def test_every_image_is_pinned_to_a_release(services: dict[str, Any]) -> None:
    for name, service in services.items():
        image = str(service["image"])
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, f"{name}: {image} has no tag"
        assert tag != "latest" and re.search(r"\d+\.\d+", tag), f"{name}: {image} is not pinned"


def test_every_long_running_service_has_a_health_check_on_its_own_port(services: dict[str, Any]) -> None:
    for name, service in services.items():
        if service.get("restart") == "no":  # one-shot helpers
            continue
        check = service.get("healthcheck")
        assert check and check["test"][0] == "CMD", f"{name} has no health check"
        urls = [arg for arg in check["test"] if "://" in arg or "urlopen(" in arg]
        assert len(urls) == 1, name
        port = int(re.search(r":(\d+)/", urls[0])[1])  # type: ignore[index]
        assert port in exposed_ports(service), f"{name} health check probes {port}"


def test_the_health_tool_volume_is_filled_before_anything_uses_it(services: dict[str, Any]) -> None:
    for name, service in services.items():
        tool_paths = [
            a for a in service.get("healthcheck", {}).get("test", []) if a.startswith("/healthtools")
        ]
        if not tool_paths:
            continue
        targets = {v["target"] for v in service["volumes"] if isinstance(v, dict)}
        assert "/healthtools" in targets, name
        assert service["depends_on"]["healthtools"]["condition"] == "service_completed_successfully", name


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """container path -> host path, for bind mounts of repository files."""
    mounts = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str) and volume.startswith("./"):
            host, container = volume.split(":")[:2]
            mounts[container] = host
    return mounts


def test_every_mounted_file_exists(services: dict[str, Any]) -> None:
    for name, service in services.items():
        for host in _mounts(service).values():
            assert (REPO / host).exists(), f"{name} mounts missing {host}"


def test_every_config_path_a_command_names_is_mounted(services: dict[str, Any]) -> None:
    for name, service in services.items():
        command = service.get("command") or []
        for arg in command:
            flag = re.match(r"-{1,2}config(?:\.file)?=(.+)", arg)
            if flag:
                assert flag[1] in _mounts(service), f"{name}: {flag[1]} is not mounted"


def test_the_prometheus_rule_glob_finds_the_shipped_rules(services: dict[str, Any]) -> None:
    prometheus = load_yaml(PROMETHEUS_FILE)
    mounts = _mounts(services["prometheus"])
    for pattern in prometheus["rule_files"]:
        directory, _, glob = pattern.rpartition("/")
        assert directory in mounts, pattern
        assert sorted((REPO / mounts[directory]).glob(glob)) == [p.resolve() for p in RULE_FILES]
    assert mounts["/etc/prometheus/rules"].lstrip("./") == str(RULES_DIR.relative_to(REPO))


def test_grafana_loads_the_provisioned_dashboards(services: dict[str, Any]) -> None:
    mounts = _mounts(services["grafana"])
    provisioning_dir = DATASOURCES_FILE.parents[1]
    assert (REPO / mounts["/etc/grafana/provisioning"]).resolve() == provisioning_dir
    provider_path = load_yaml(DASHBOARD_PROVIDERS_FILE)["providers"][0]["options"]["path"]
    assert provider_path in mounts
    assert sorted((REPO / mounts[provider_path]).resolve().glob("*.json")) == DASHBOARD_FILES
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home.startswith(provider_path + "/")
    assert (REPO / mounts[provider_path] / home.rpartition("/")[2]).exists()


# ── Names used anywhere in the deployment ────────────────────────────────────────────────────


def test_every_context_integrity_name_in_the_deployment_is_one_the_library_emits() -> None:
    seen = 0
    for path in every_deployment_file():
        text = path.read_text(encoding="utf-8")
        for dotted in re.findall(r"context_integrity(?:\.[a-z0-9_]+)+", text):
            seen += 1
            assert is_emitted_name(dotted), f"{path.name}: {dotted} is not a name the library emits"
        for metric in re.findall(r"\bcontext_integrity_[a-z0-9_]+", text):
            assert metric == names.PROMETHEUS_FINDINGS_METRIC, f"{path.name}: {metric}"
    assert seen > 10


def test_every_kind_named_in_the_deployment_is_a_real_kind() -> None:
    for path in every_deployment_file():
        for kind in re.findall(r'kind\s*[=:]\s*"?([a-z]+(?:-[a-z]+)+)', path.read_text(encoding="utf-8")):
            assert kind in KINDS, f"{path.name}: {kind}"


# ── Alert rules ──────────────────────────────────────────────────────────────────────────────


def test_every_rule_expression_uses_only_the_library_metric_and_labels(rules: list[dict[str, Any]]) -> None:
    assert rules
    for rule in rules:
        assert_promql_uses_library_names(rule["expr"], rule.get("alert") or rule["record"])


def _kind_filter(rule: dict[str, Any]) -> set[str]:
    return {
        m[names.METRIC_KIND]
        for metric, m in promql_selectors(rule["expr"])
        if metric == names.PROMETHEUS_FINDINGS_METRIC and names.METRIC_KIND in m
    }


def test_one_alert_pages_on_column_type_mismatch_and_one_fires_on_any_kind(
    alerts: dict[str, dict[str, Any]],
) -> None:
    column_type = [a for a in alerts.values() if _kind_filter(a) == {"column-type-mismatch"}]
    any_kind = [a for a in alerts.values() if not _kind_filter(a)]
    assert len(column_type) == 1 and len(any_kind) == 1
    for alert in (*column_type, *any_kind):
        grouping = promql_grouping_labels(alert["expr"])
        assert {SERVICE_LABEL, names.METRIC_TOOL, names.METRIC_KIND} <= grouping, alert["alert"]
        # The brand-new-series branch: a plain increase() misses a series' first finding.
        assert "unless" in alert["expr"] and "offset" in alert["expr"], alert["alert"]
        assert "increase(" in alert["expr"]
        assert alert["labels"]["severity"]


def test_every_alert_has_promtool_cases_that_fire_and_that_stay_quiet(
    alerts: dict[str, dict[str, Any]],
) -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for path in RULE_TEST_FILES:
        suite = load_yaml(path)
        referenced = {(path.parent / f).resolve() for f in suite["rule_files"]}
        assert referenced == {p.resolve() for p in RULE_FILES}
        for case in suite["tests"]:
            for check in case.get("alert_rule_test", []):
                (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert fired == set(alerts) and quiet == set(alerts)


def test_alertmanager_routes_every_alert_to_a_webhook_grouped_by_rule_labels(
    alerts: dict[str, dict[str, Any]],
) -> None:
    config = load_yaml(ALERTMANAGER_FILE)
    receivers = {r["name"]: r for r in config["receivers"]}
    route = config["route"]
    assert receivers[route["receiver"]]["webhook_configs"]
    rule_labels = {"alertname"} | {label for a in alerts.values() for label in a["labels"]}
    rule_labels |= set().union(*(promql_grouping_labels(a["expr"]) for a in alerts.values()))
    assert set(route["group_by"]) <= rule_labels
    for inhibit in config.get("inhibit_rules", []):
        assert set(inhibit["equal"]) <= rule_labels
        for matcher in (*inhibit["source_matchers"], *inhibit["target_matchers"]):
            assert re.fullmatch(r'alertname="(\w+)"', matcher)[1] in alerts  # type: ignore[index]


# ── Grafana ──────────────────────────────────────────────────────────────────────────────────


def test_grafana_provisions_tempo_prometheus_and_jaeger_with_fixed_uids(
    datasources: list[dict[str, Any]],
) -> None:
    assert {ds["type"] for ds in datasources} == {"tempo", "prometheus", "jaeger"}
    assert all(ds.get("uid") for ds in datasources)


def test_tempo_cross_links_map_span_attributes_to_counter_labels(datasources: list[dict[str, Any]]) -> None:
    uids = {ds["uid"] for ds in datasources}
    tempo = next(ds for ds in datasources if ds["type"] == "tempo")["jsonData"]
    assert tempo["tracesToMetrics"]["datasourceUid"] in uids
    assert tempo["serviceMap"]["datasourceUid"] in uids
    mapping = {t["key"]: t.get("value", t["key"]) for t in tempo["tracesToMetrics"]["tags"]}
    assert mapping == {SERVICE_NAME: SERVICE_LABEL, names.GEN_AI_TOOL_NAME: names.METRIC_TOOL}
    for query in tempo["tracesToMetrics"]["queries"]:
        assert_promql_uses_library_names(query["query"], query["name"])
    prometheus = next(ds for ds in datasources if ds["type"] == "prometheus")["jsonData"]
    assert all(d["datasourceUid"] in uids for d in prometheus["exemplarTraceIdDestinations"])


def _dashboard_targets(dashboard: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel, target


def _datasource_refs(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("datasource"), dict):
            yield node["datasource"]
        for value in node.values():
            yield from _datasource_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _datasource_refs(item)


@pytest.fixture(scope="module", params=DASHBOARD_FILES, ids=lambda p: p.name)
def dashboard(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load_json(request.param)  # type: ignore[no-any-return]


def test_every_data_source_the_dashboard_uses_is_provisioned(
    dashboard: dict[str, Any], datasources: list[dict[str, Any]]
) -> None:
    provisioned = {(ds["type"], ds["uid"]) for ds in datasources}
    refs = list(_datasource_refs(dashboard))
    assert refs
    for ref in refs:
        assert (ref["type"], ref["uid"]) in provisioned, ref


def test_every_dashboard_prometheus_query_uses_only_the_library_names(dashboard: dict[str, Any]) -> None:
    expressions = [(p["title"], t["expr"]) for p, t in _dashboard_targets(dashboard) if "expr" in t]
    variables = [
        (v["name"], v["definition"]) for v in dashboard["templating"]["list"] if v["type"] == "query"
    ]
    assert expressions
    for title, expr in expressions:
        assert_promql_uses_library_names(expr, title)
    for name, definition in variables:
        inner = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", definition)
        assert inner and inner[1] == names.PROMETHEUS_FINDINGS_METRIC, name
        assert inner[2] in FINDINGS_METRIC_LABELS, name


def test_the_dashboard_charts_findings_over_time_by_kind_and_tool(dashboard: dict[str, Any]) -> None:
    charts = [
        t["expr"]
        for p, t in _dashboard_targets(dashboard)
        if p["type"] == "timeseries" and names.PROMETHEUS_FINDINGS_METRIC in t.get("expr", "")
    ]
    assert any({names.METRIC_KIND, names.METRIC_TOOL} <= promql_grouping_labels(e) for e in charts)


def _traceql_attributes(query: str) -> set[str]:
    return set(re.findall(r"\bspan\.([A-Za-z0-9_.]+)", query))


def test_the_dashboard_selects_spans_with_findings_and_links_to_their_traces(
    dashboard: dict[str, Any],
) -> None:
    traceql = [(p, t) for p, t in _dashboard_targets(dashboard) if t.get("queryType") == "traceql"]
    assert traceql
    for panel, target in traceql:
        for attribute in _traceql_attributes(target["query"]):
            assert attribute in emitted_dotted_names(), (panel["title"], attribute)
        for span_name in re.findall(r'\bname\s*=\s*"([^"]+)"', target["query"]):
            assert span_name == names.DISPOSITION_SPAN
        links = [
            link
            for override in panel["fieldConfig"]["overrides"]
            for prop in override["properties"]
            if prop["id"] == "links"
            for link in prop["value"]
        ]
        assert any(link.get("internal", {}).get("datasourceUid") == "tempo" for link in links), panel["title"]
        assert any("/trace/${__value.raw}" in link.get("url", "") for link in links), panel["title"]
    queries = [t["query"] for _, t in traceql]
    assert any(re.search(re.escape(names.FINDINGS_COUNT) + r"\s*>\s*0", q) for q in queries)
    assert any(names.DISPOSITION_SPAN in q for q in queries)
