"""The docs site builds with ``mkdocs build --strict``, and its generated pages hold every name the code owns.

The laws under test: the site builds in strict mode (a broken link or anchor, a page left out of
the nav, a marker naming nothing, a docstring mkdocstrings cannot render: each fails it); the built
reference pages name every ``setup()`` option and dial, every constant of the telemetry names
module, every subcommand and option of the command line, every registered check's row and what arms
it, and every name the top level exports; every check's ceiling is quoted, verbatim, on its check's
page. The generated parts come from ``docs/_hooks/reference.py``, which this module also drives
directly, so a marker the hook does not know fails with the page's name.
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import context_integrity as ci
from context_integrity.cli import parser
from context_integrity.judge.registry import BUILT_IN
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "docs" / "_hooks" / "reference.py"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(page: Path) -> str:
    """A built page's visible text, without its navigation and entities decoded, with no whitespace
    at all: markup splits text where the source had none (``overrides `X`.`` renders as a code
    element, then the stop), so words are compared squashed, through :func:`squashed`."""
    markup = page.read_text(encoding="utf-8")
    markup = re.sub(r"<(script|style|nav)\b[^>]*>.*?</\1>", " ", markup, flags=re.S)
    return squashed(html.unescape(re.sub(r"<[^>]+>", " ", markup)))


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("`", ""))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def page(site: Path, path: str) -> str:
    return _text(site / path / "index.html")


def test_the_site_builds_in_strict_mode_with_every_page(site: Path) -> None:
    pages = {p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md")}
    pages = {p for p in pages if "_hooks" not in p.parts}
    assert len(pages) >= 25
    for source in pages:
        built = site / source.parent if source.name == "index" else site / source
        assert (built / "index.html").exists(), source
    assert (site / "assets" / "phoenix-finding.png").exists()


def test_the_setup_reference_names_every_option_with_its_meaning(site: Path) -> None:
    from context_integrity.judge.dials import dial_specs
    from context_integrity.telemetry.export.options import OPTION_MEANINGS

    text = page(site, "reference/setup")
    parameters = inspect.signature(ci.setup).parameters
    for name in parameters:
        assert squashed(f"`{name}`") in text, name
    for name, spec in dial_specs().items():
        assert name in parameters
        assert squashed(spec.meaning) in text, name
    for name, meaning in OPTION_MEANINGS.items():
        assert name in parameters, f"OPTION_MEANINGS explains {name!r}, which setup() does not take"
        assert squashed(meaning) in text, name


def test_every_setup_option_is_explained_somewhere_in_the_code() -> None:
    from context_integrity.judge.dials import dial_specs
    from context_integrity.telemetry.export.options import OPTION_MEANINGS

    unexplained = [
        name
        for name in inspect.signature(ci.setup).parameters
        if name not in dial_specs() and name not in OPTION_MEANINGS
    ]
    assert unexplained == [], f"add each to OPTION_MEANINGS in telemetry/export/options.py: {unexplained}"


def test_the_telemetry_reference_lists_every_name_the_module_defines(site: Path) -> None:
    text = page(site, "reference/telemetry")
    defined = ast.parse(Path(inspect.getfile(names)).read_text(encoding="utf-8")).body
    constants = {
        node.target.id: getattr(names, node.target.id)
        for node in defined
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if not node.target.id.startswith("_")
    }
    assert len(constants) > 60
    for constant, value in constants.items():
        assert constant in text, constant
        if isinstance(value, (set, frozenset)):
            value = tuple(sorted(value))  # listed sorted: a set's own order changes between processes
        shown = value if not isinstance(value, tuple) else value[0]
        assert squashed(str(shown)) in text, (constant, shown)
    for function in (
        "tool_span_name",
        "run_span_name",
        "chat_span_name",
        "witness_attribute",
        "row_attribute",
    ):
        assert f"{function}(" in text, function
    assert "context_integrity.row.<check>.<seam>.<field>" in text


def test_the_cli_reference_is_every_subcommands_help(site: Path) -> None:
    text = page(site, "reference/cli")
    top = parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    assert commands.choices
    for name, command in commands.choices.items():
        assert squashed(f"context-integrity {name}") in text, name
        for action in command._actions:
            for flag in action.option_strings:
                assert flag in text, (name, flag)
            if action.help and action.help != argparse.SUPPRESS:
                assert squashed(action.help) in text, (name, action.help)


def test_the_arming_page_holds_the_registrys_ledger_table(site: Path) -> None:
    text = page(site, "checks")
    for entry in BUILT_IN:
        assert squashed(entry.armed_by) in text, entry.name
        for row in entry.rows:
            assert row.render() in text


def test_the_api_reference_documents_every_top_level_name(site: Path) -> None:
    markup = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ci.__all__:
        assert f'id="context_integrity.{ci._HOMES[name]}.{name}"' in markup, name
    assert "context_integrity.checks.column_types.check_column_types" in page(site, "reference/api")


def test_each_check_page_quotes_its_checks_ceiling_verbatim(site: Path) -> None:
    quoted: dict[str, str] = {}
    for source in sorted((ROOT / "docs" / "checks").glob("*.md")):
        for row in re.findall(r"^<!-- ceiling: (\S+) -->$", source.read_text(encoding="utf-8"), flags=re.M):
            quoted[row] = source.stem
    # every check's ceiling is on a page: one marker per check (the column check's rows share one)
    for entry in BUILT_IN:
        rows = [row.render() for row in entry.rows]
        on = [quoted[row] for row in rows if row in quoted]
        assert on, f"no page under docs/checks quotes the ceiling of {entry.name!r}"
        text = page(site, f"checks/{on[0]}")
        assert entry.ceiling is not None and squashed(entry.ceiling) in text, entry.name


def test_a_marker_the_hook_does_not_know_fails_the_build_naming_the_page() -> None:
    hook = _hook()
    with pytest.raises(ValueError, match=r"page\.md: unknown marker"):
        hook.render("<!-- generated: nothing-like-this -->\n", "page.md")
    with pytest.raises(ValueError, match=r"page\.md: .* names no registered row"):
        hook.render("<!-- ceiling: no-such-kind@write -->\n", "page.md")
    rendered = hook.render("before\n<!-- ceiling: empty-lookup@write -->\nafter\n", "page.md")
    assert rendered == f"before\n> {ci.CEILINGS['empty-lookup@write']}\nafter\n"
