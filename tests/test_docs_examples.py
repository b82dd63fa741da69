"""Every python block in the README and the docs runs as written.

The law under test: a reader who copies a python block from the README or from any page under
``docs/`` gets a program that runs (imports included, scripted models, no network, no key) and
prints what the page says it prints. Each block is one test, found with pytest-examples (the tool
pydantic-ai's docs use), chosen over Sybil because its fence settings (``{test="..."}``) and its
print check (``#>`` lines under a ``print``, rewritten by ``pytest --update-examples``) are exactly
the conventions the docs need, with no parser to configure per page. What the fence says decides
how a block is run:

- ````python`` — runs in this process, on a fresh pipeline: a real SDK tracer provider held in
  memory is set up first, so the block's own ``ci.setup(...)`` applies its dials to it (as a
  second ``setup()`` does) and nothing outlives the test. What it prints must be written under
  each ``print``: ``#>`` lines, or a triple-quoted block for long output.
- ````python {test="process"}`` — runs in a fresh interpreter, as ``python file.py``: for a block
  that installs global providers (Logfire) or passes exporter options to ``setup()``. It must exit 0.
- ````python {test="fragment"}`` — a piece of a larger program, and the page says so: it must
  compile, and is not run.

A block whose only line is ``--8<-- "path"`` shows that file, as the site does (pymdownx.snippets),
and the file is what runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples
from tests.conftest import Telemetry

from context_integrity.integrations import SUPPORTED
from context_integrity.judge.book import BookSnapshot
from context_integrity.telemetry.setup import CONTRACTS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SNIPPET = re.compile(r'^--8<-- "([^"]+)"\s*$')
MODES = ("run", "process", "fragment")


def documents() -> list[Path]:
    """The README and every page under docs/ (the hooks that build the site are not pages)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)]


def _expanded(example: CodeExample) -> CodeExample:
    lines = example.source.strip().splitlines()
    if len(lines) == 1 and (found := SNIPPET.match(lines[0])):
        return dataclasses.replace(example, source=(ROOT / found.group(1)).read_text(encoding="utf-8"))
    return example


def examples() -> list[CodeExample]:
    found = [_expanded(example) for document in documents() for example in find_examples(document)]
    return [example for example in found if example.prefix.split()[0] in ("py", "python")]


def _mode(example: CodeExample) -> str:
    mode = example.prefix_settings().get("test", "run")
    assert mode in MODES, f'{example}: {{test="{mode}"}} is none of {MODES}'
    return mode


def _id(example: CodeExample) -> str:
    return f"{example.path.relative_to(ROOT)}:{example.start_line}"


EXAMPLES = examples()


@pytest.fixture
def fresh_process_state(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """A pipeline of the test's own, an empty contract book and no OTEL_* configuration, as a fresh
    interpreter has (a module imported by an earlier test, such as the demo, declared its tools in
    the process-wide book), and afterwards no framework left armed and no ``__main__`` left replaced
    (the ``telemetry`` fixture puts the book back)."""
    CONTRACTS.restore(BookSnapshot(contracts={}, local=frozenset(), served={}, claims={}, toolsets={}))
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    main = sys.modules["__main__"]
    telemetry.configure()
    yield telemetry
    sys.modules["__main__"] = main
    for _, module in SUPPORTED:
        try:
            importlib.import_module(module).uninstrument_all()
        except ModuleNotFoundError:
            continue


def test_every_page_is_searched_and_blocks_are_found() -> None:
    searched = documents()
    assert ROOT / "README.md" in searched and DOCS / "index.md" in searched
    assert len(EXAMPLES) >= 30
    assert {example.path for example in EXAMPLES} >= {ROOT / "README.md", DOCS / "get-started.md"}


@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_the_example_runs_as_written(
    example: CodeExample,
    eval_example: EvalExample,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    mode = _mode(example)
    if mode == "fragment":
        compile(example.source, str(example), "exec")
        return
    if mode == "process":
        # Nothing checks what a block in its own interpreter prints, so it may not claim an output.
        assert "#>" not in example.source, (
            f"{example}: a process block's output is not checked; say it in prose"
        )
        script = tmp_path / "example.py"
        script.write_text(example.source, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["CONTEXT_INTEGRITY_RECORDING"] = str(tmp_path / "recording.otlp.jsonl")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{example}\n{done.stdout}\n{done.stderr}"
        return
    request.getfixturevalue("fresh_process_state")
    eval_example.set_config(line_length=110)
    raised: str | None = None
    try:
        if eval_example.update_examples:
            eval_example.run_print_update(example)
        else:
            eval_example.run_print_check(example)
    except Exception as error:
        raised = _said_plainly(error)
    if raised is not None:
        # Said as text, and outside the handler so that the error is not chained to it: pytest's own
        # rendering of code run from a page's block can crash the whole session (its frames' positions
        # do not match a file), and a failing page must fail one test.
        pytest.fail(f"{example} raised:\n{raised}", pytrace=False)


def _said_plainly(error: BaseException) -> str:
    """The error and its frames as file:line lines, without reading any source: a page's block runs
    from a file whose lines the traceback module's position lookup cannot match."""
    frames = [
        f"  {frame.f_code.co_filename}:{line} in {frame.f_code.co_name}"
        for frame, line in traceback.walk_tb(error.__traceback__)
    ]
    return "\n".join([*frames, f"{type(error).__name__}: {error}"])
