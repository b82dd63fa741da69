"""The layers in DESIGN.md hold, because a test reads every import in src/.

The laws under test: a check imports neither the judge nor telemetry; only ``telemetry/`` and
``integrations/`` import OpenTelemetry, and ``serve/`` only its protocol (``opentelemetry-proto``);
only ``integrations/`` imports a framework; ``recording/`` and
``report/`` never import the SDK; the public surface is small; and ``import context_integrity.checks``
works with OpenTelemetry not installed. Imports are read from the syntax tree (including imports inside
functions), so a lazy import is still an import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import context_integrity

SRC = Path(context_integrity.__file__).resolve().parent
PACKAGE = "context_integrity"

FRAMEWORKS = (
    "pydantic_ai",
    "agents",
    "langchain",
    "langchain_core",
    "langgraph",
    "mcp",
    "fastmcp",
    "logfire",
    "openinference",
    "openai",
    "anthropic",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute, resolved from relative imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module_name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _sources(*under: str) -> list[Path]:
    roots = [SRC / part for part in under] if under else [SRC]
    files: list[Path] = []
    for root in roots:
        files.extend([root] if root.is_file() else sorted(root.rglob("*.py")))
    return files


def _violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in files:
        for module in sorted(_imports(path)):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(SRC)} imports {module}")
    return out


def _outside(*allowed: str) -> list[Path]:
    return [p for p in _sources() if not any(p.relative_to(SRC).parts[0] == a for a in allowed)]


def test_checks_import_neither_the_judge_nor_telemetry() -> None:
    forbidden = (f"{PACKAGE}.judge", f"{PACKAGE}.telemetry", f"{PACKAGE}.integrations", "opentelemetry")
    assert _violations(_sources("checks", "contracts", "findings.py", "limits.py"), forbidden) == []


def test_the_judge_never_imports_opentelemetry_or_telemetry() -> None:
    assert _violations(_sources("judge", "ledger.py"), ("opentelemetry", f"{PACKAGE}.telemetry")) == []


def test_only_telemetry_and_integrations_import_opentelemetry() -> None:
    assert _violations(_outside("telemetry", "integrations", "serve"), ("opentelemetry",)) == []


def test_the_pipeline_stage_imports_opentelemetry_proto_and_never_the_sdk() -> None:
    """``serve/`` speaks OTLP with opentelemetry-proto and grpcio: never the SDK or the API, never a
    telemetry module that does, never a framework."""
    files = _sources("serve")
    assert files
    proto = [m for p in files for m in _imports(p) if m.startswith("opentelemetry.proto")]
    assert proto, "serve/ reads OTLP with opentelemetry-proto"
    others = [
        line
        for line in _violations(files, ("opentelemetry", *_sdk_users(), *FRAMEWORKS))
        if not line.split(" imports ", 1)[1].startswith("opentelemetry.proto.")
    ]
    assert others == []


def test_only_integrations_import_a_framework() -> None:
    assert _violations(_outside("integrations"), FRAMEWORKS) == []


def _sdk_users() -> set[str]:
    """The telemetry modules that import OpenTelemetry, themselves or through one another: found, not listed."""
    imported = {_module_name(p): _imports(p) for p in _sources("telemetry")}
    users = {m for m, found in imported.items() if _violations_in(found, ("opentelemetry",))}
    while more := {m for m, found in imported.items() if m not in users and found & users}:
        users |= more
    return users


def _violations_in(modules: set[str], forbidden: tuple[str, ...]) -> bool:
    return any(m == f or m.startswith(f + ".") for m in modules for f in forbidden)


def test_the_sdk_users_are_found() -> None:
    users = _sdk_users()
    assert {
        f"{PACKAGE}.telemetry.setup",
        f"{PACKAGE}.telemetry.run.lifecycle",
        f"{PACKAGE}.telemetry.export.pipeline",
    } <= users
    assert f"{PACKAGE}.telemetry.schema.names" not in users


def test_reading_back_never_imports_the_sdk() -> None:
    forbidden = ("opentelemetry", *_sdk_users())
    assert _violations(_sources("recording", "report", "traces"), forbidden) == []


def test_the_layer_test_sees_a_violation() -> None:
    # The reader must catch both spellings, or the tests above could never fail.
    planted = SRC / "checks" / "_planted_for_test.py"
    planted.write_text("from ..judge import RunJudge\n\ndef f():\n    import opentelemetry.trace\n")
    try:
        found = _violations([planted], (f"{PACKAGE}.judge", "opentelemetry"))
    finally:
        planted.unlink()
    assert found == [
        "checks/_planted_for_test.py imports context_integrity.judge",
        "checks/_planted_for_test.py imports context_integrity.judge.RunJudge",
        "checks/_planted_for_test.py imports opentelemetry.trace",
    ]


def test_the_public_surface_is_what_a_user_writes() -> None:
    exported = set(context_integrity.__all__)
    # What a user writes: setup, declarations, runs (and carry_run, to take one to another thread),
    # the loop shapes, the errors, and the ceilings in one mapping. Everything else is reached
    # through its submodule.
    assert len(exported) <= 30
    assert {"setup", "tool", "declare_tool", "run", "absent", "RequestFrame", "DeclarationError"} <= exported
    assert set(dir(context_integrity)) >= exported
    for internal in (
        "RowsetReading",
        "ArmedCall",
        "dedupe_findings",
        "finding_identity",
        "REGISTERED_CHECKS",
        "check_column_types",
    ):
        assert internal not in exported
        with pytest.raises(AttributeError):
            getattr(context_integrity, internal)
    for name in exported:
        assert getattr(context_integrity, name) is not None


def test_import_checks_works_without_opentelemetry() -> None:
    script = textwrap.dedent(
        """
        import sys
        class _NoOtel:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
                return None
        sys.meta_path.insert(0, _NoOtel())
        import context_integrity.checks.column_types as columns
        encounter = columns.check_column_types(
            tool_name="t", columns={"lun": "number"}, result=[{"lun": ""}], call_id="c"
        )
        assert encounter.disposition == "checked-fail", encounter
        assert not any(m.startswith("opentelemetry") for m in sys.modules)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(SRC.parent)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_name_the_top_level_no_longer_exports_still_resolves_and_says_where_it_went() -> None:
    from context_integrity.checks.column_types import COLUMN_TYPE_CEILING

    for moved in context_integrity._MOVED:
        assert moved not in context_integrity.__all__ and moved not in dir(context_integrity)
    with pytest.warns(DeprecationWarning, match=r'CEILINGS\["column-type-mismatch@write"\]'):
        assert context_integrity.COLUMN_TYPE_CEILING == COLUMN_TYPE_CEILING
    with pytest.warns(DeprecationWarning):  # every time: the name is never cached on the module
        assert context_integrity.COLUMN_TYPE_CEILING == COLUMN_TYPE_CEILING


def test_all_is_the_table_of_homes() -> None:
    assert sorted(context_integrity.__all__) == sorted(context_integrity._HOMES)
    assert len(set(context_integrity.__all__)) == len(context_integrity.__all__)
