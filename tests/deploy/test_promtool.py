"""The shipped Prometheus and Alertmanager files pass the projects' own checkers.

The laws under test:

- ``promtool test rules`` passes every shipped unit-test file (which cover every alert rule);
- ``promtool check rules`` accepts every rule file, and ``promtool check config`` accepts
  prometheus.yml both as shipped and with its rule glob pointed at the repository's rules;
- ``amtool check-config`` accepts alertmanager.yml;
- the unit tests really pin the brand-new-series case: with that branch cut out of the rules
  (leaving a plain ``increase()``), ``promtool test rules`` fails.

promtool and amtool come from Debian's prometheus and prometheus-alertmanager packages
(.ci/system-deps installs them). Without them these tests skip on a developer's machine and fail
in CI, where a skip would hide a missing install step.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ._files import ALERTMANAGER_FILE, PROMETHEUS_FILE, RULE_FILES, RULE_TEST_FILES, RULES_DIR

TIMEOUT_S = 120


def require_binary(name: str, package: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} not found: install the Debian package {package} (.ci/system-deps does)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def promtool() -> str:
    return require_binary("promtool", "prometheus")


@pytest.fixture(scope="module")
def amtool() -> str:
    return require_binary("amtool", "prometheus-alertmanager")


def test_there_is_something_to_check() -> None:
    assert RULE_FILES and RULE_TEST_FILES


@pytest.mark.parametrize("test_file", RULE_TEST_FILES, ids=lambda p: p.name)
def test_promtool_unit_tests_pass(promtool: str, test_file: Path) -> None:
    result = run(promtool, "test", "rules", test_file.name, cwd=test_file.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("rule_file", RULE_FILES, ids=lambda p: p.name)
def test_promtool_accepts_the_rules(promtool: str, rule_file: Path) -> None:
    result = run(promtool, "check", "rules", str(rule_file))
    assert result.returncode == 0, result.stdout + result.stderr
    shipped = len([r for g in yaml.safe_load(rule_file.read_text())["groups"] for r in g["rules"]])
    assert f"SUCCESS: {shipped} rules found" in result.stdout


def test_promtool_accepts_the_config_as_shipped(promtool: str) -> None:
    result = run(promtool, "check", "config", "--syntax-only", str(PROMETHEUS_FILE))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_accepts_the_config_with_its_rules(promtool: str, tmp_path: Path) -> None:
    config = yaml.safe_load(PROMETHEUS_FILE.read_text())
    config["rule_files"] = [str(RULES_DIR / Path(p).name) for p in config["rule_files"]]
    local = tmp_path / "prometheus.yml"
    local.write_text(yaml.safe_dump(config))
    result = run(promtool, "check", "config", str(local))
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(f"SUCCESS: {p}" in result.stdout or str(p) in result.stdout for p in RULE_FILES)


def test_amtool_accepts_the_alertmanager_config(amtool: str) -> None:
    result = run(amtool, "check-config", str(ALERTMANAGER_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_unit_tests_catch_a_rule_that_only_uses_increase(promtool: str, tmp_path: Path) -> None:
    """Cut the ``unless ... offset`` branch out of every alert: the first finding goes unseen."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    cut = alerts = 0
    for rule_file in RULE_FILES:
        document = yaml.safe_load(rule_file.read_text())
        for group in document["groups"]:
            for rule in group["rules"]:
                expr, count = re.subn(r"\(\s*\(\s*[^()]*?\bunless\b[^()]*?\)\s*or\s*", "(", rule["expr"])
                cut += count
                alerts += "alert" in rule
                rule["expr"] = expr
        (tmp_path / "rules" / rule_file.name).write_text(yaml.safe_dump(document))
    assert cut == alerts >= 1, "the new-series branch was not found in every alert"
    for test_file in RULE_TEST_FILES:
        shutil.copy(test_file, tmp_path / "tests" / test_file.name)
        result = run(promtool, "test", "rules", test_file.name, cwd=tmp_path / "tests")
        assert result.returncode != 0, "promtool tests passed a rule without the new-series branch"
        assert "FAILED" in result.stdout + result.stderr
