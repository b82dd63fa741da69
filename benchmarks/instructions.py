"""The framework runs of bench_langchain, bench_openai_agents and bench_pydantic_ai, counted in instructions by valgrind.

The CPU-time ratios of those scripts are what their targets read, but on a shared machine two
runs of identical sides already differ by a few percent (their "bare again" control). This
script is their noise-free companion: it counts the instructions a run executes, which no
other job on the machine changes. Each side runs in two fresh interpreters under callgrind,
one doing ``RUNS_FEW`` runs after a warm-up and one ``RUNS_MANY``; the difference, divided by
the extra runs, is one run's instructions without the interpreter's start-up and imports
(the hash seed is fixed, so the two start alike). The same sides, workload and provider as
the CPU-time scripts, whose functions run here; as there, what is outside their clock (building
the agent, collecting the heap before a run) is outside the count: every process builds as many
agents and collects once before the runs counted.

Instructions are not time (a cache miss costs no instruction), so these ratios are no
substitute for the targets' figures; they say how much work each side adds, and how much of
it the spans alone (the floor) account for. Not in ``run_all.py``: it needs valgrind and
takes about ten minutes.

Run: ``python benchmarks/instructions.py [langchain] [openai_agents] [pydantic_ai]`` (valgrind on the PATH).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

RUNS_FEW, RUNS_MANY = 1, 4
WARM_UP = 2

# framework -> configuration -> the sides counted, the bare one first (each ratio is to it).
SIDES: dict[str, dict[str, tuple[str, ...]]] = {
    "langchain": {
        "no telemetry": ("bare", "spans only", "columns", "every seam"),
        "beside OpenInference": ("bare", "columns", "every seam"),
    },
    "openai_agents": {
        "the SDK's tracing only": ("bare", "floor", "armed"),
        "beside OpenInference": ("bare", "armed"),
    },
    "pydantic_ai": {
        "its instrumentation on": ("without", "floor", "columns", "with"),
    },
}


def _langchain(side: str, beside: bool, runs: int) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import bench_langchain as bench
    import context_integrity as ci

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(bench._Discard()))
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    host_spans = 0
    if beside:
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
        logging.getLogger("opentelemetry.attributes").setLevel(logging.ERROR)  # as bench_langchain does
        exported = bench._Discard.exported
        bench._agent("bare").invoke({"messages": [{"role": "user", "content": "fetch 20 rows"}]})
        host_spans = bench._Discard.exported - exported
    for _ in range(WARM_UP):
        bench._one_run(side, host_spans)  # asserts the side makes the spans it should
    agents = [bench._agent(side) for _ in range(RUNS_MANY)]  # as many built in every process
    gc.collect()
    for agent in agents[:runs]:
        agent.invoke({"messages": [{"role": "user", "content": "fetch 20 rows"}]})


def _openai_agents(side: str, beside: bool, runs: int) -> None:
    from agents import Runner, set_trace_processors
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import bench_openai_agents as bench
    import context_integrity as ci
    from context_integrity.integrations import openai_agents

    async def main() -> None:
        set_trace_processors([])  # as bench_openai_agents: the SDK's tracing on, its uploader off
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(bench._Discard()))
        ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
        ci.declare_tool("read_rows", result_columns={"row": "number", "value": "number", "label": "string"})
        if beside:
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        floor = provider.get_tracer("bench.floor") if side == "floor" else None
        for _ in range(WARM_UP):
            await bench._timed(side == "armed", floor)  # asserts the run is the scripted one
        if side == "armed":
            openai_agents.instrument_all()
        prepared = [bench._prepared(floor) for _ in range(RUNS_MANY)]  # as many built in every process
        gc.collect()
        for _model, agent, hooks in prepared[:runs]:
            await Runner.run(agent, "go", max_turns=bench.STEPS + 1, hooks=hooks)

    asyncio.run(main())


def _pydantic_ai(side: str, runs: int) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import bench_pydantic_ai as bench
    import context_integrity as ci
    from context_integrity.integrations import pydantic_ai as integration

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(bench._Discard()))
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    ci.declare_tool("index")
    bench._declare(side)
    agents = [bench._agent(provider) for _ in range(RUNS_MANY)]  # as many built in every process
    (integration.instrument_all if side in bench.JUDGED else integration.uninstrument_all)()
    capabilities = [bench._Floor()] if side == "floor" else None
    for _ in range(WARM_UP):
        agents[0].run_sync("start", capabilities=capabilities)
    gc.collect()
    for agent in agents[:runs]:
        result = agent.run_sync("start", capabilities=capabilities)
        assert result.usage.requests == bench.STEPS


def _child(framework: str, configuration: str, side: str, runs: int) -> None:
    if framework == "pydantic_ai":
        _pydantic_ai(side, runs)
        return
    beside = configuration == "beside OpenInference"
    (_langchain if framework == "langchain" else _openai_agents)(side, beside, runs)


def _instructions(framework: str, configuration: str, side: str, runs: int) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        framework,
        configuration,
        side,
        str(runs),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{framework} {configuration} {side}: valgrind failed\n{done.stderr[-2000:]}")
    return int(found.group(1))


def _per_run(framework: str, configuration: str, side: str) -> float:
    with ThreadPoolExecutor(2) as pool:  # the two counts of a side side by side: one core each
        few, many = pool.map(
            lambda runs: _instructions(framework, configuration, side, runs), (RUNS_FEW, RUNS_MANY)
        )
    return (many - few) / (RUNS_MANY - RUNS_FEW)


def main(frameworks: tuple[str, ...] = tuple(SIDES)) -> dict[str, float]:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH (apt-get install valgrind)")
    ratios: dict[str, float] = {}
    for framework in frameworks:
        for configuration, sides in SIDES[framework].items():
            counts: dict[str, float] = {side: _per_run(framework, configuration, side) for side in sides}
            bare = counts[sides[0]]
            print(f"{framework}, {configuration}: instructions a 20-step run")
            for side in sides:
                ratios[f"{framework} {configuration} {side}"] = counts[side] / bare
                print(f"  {side:<12} {counts[side] / 1e6:8.1f} M   {counts[side] / bare:6.3f}x")
    return ratios


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main(tuple(sys.argv[1:]) or tuple(SIDES))
