"""Never break the host, as a property: nothing a tool returns makes the library raise.

The law under test: for any value a tool may return — nested containers, NaN and infinities, bytes,
rows of every shape, objects whose own methods raise — a decorated call inside a run, with every
check armed (columns in enforce, arguments_from with empty-lookup noticing), hands the caller either
the very object the tool returned or the refusal sentence, and the run still ends with exactly one
summary span.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import Telemetry
from tests.hostile import HostileRow, Unprintable

import context_integrity as ci
from context_integrity.telemetry.schema import names

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=8),
    st.just(math.nan),
    st.builds(Unprintable),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(st.sampled_from(["lun", "host", "size", "x"]), children, max_size=4),
    ),
    max_leaves=20,
)
rowsets = st.lists(
    st.one_of(
        st.dictionaries(st.sampled_from(["lun", "host", "size"]), values, max_size=3),
        st.builds(HostileRow),
    ),
    max_size=5,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(returned=st.one_of(values, rowsets))
def test_nothing_a_tool_returns_makes_the_library_raise(telemetry: Telemetry, returned: object) -> None:
    telemetry.spans.clear()
    telemetry.configure(check_column_types="enforce", notice_empty_lookups=True)

    @ci.tool(name="list_hosts")
    def list_hosts() -> list[dict[str, str]]:
        return [{"host": "host-4417"}]

    @ci.tool(
        name="lookup",
        result_columns={"lun": "number", "host": {"type": "string", "nullable": True}},
        arguments_from=["list_hosts"],
    )
    def lookup(host: str) -> object:
        return returned

    with ci.run("q", agent_name="fuzz") as agent_run:
        list_hosts()
        frame = ci.RequestFrame.of(
            [ci.Message("user", "look up host-4417")], tools=[ci.ToolDefinition("lookup")]
        )
        with agent_run.request(frame, model="scripted") as call:
            call.respond(calls=[ci.ToolCall("lookup", "c1", {"host": "host-4417"})])
        delivered = lookup("host-4417")
    assert delivered is returned or (isinstance(delivered, str) and delivered.startswith("Result rejected"))
    assert len(telemetry.named(names.DISPOSITION_SPAN)) == 1
