"""The demo's storage-triage tools with every declaration removed, run over scripted runs through the
hand-written loop, recorded with content capture (or, with ``--profile``, with profiling and no
content). ``python tests/advisor/scripted_triage.py RECORDING [--profile] [--runs N]``.

Most runs are clean; the field failures recur in some of them, as they do in production: LUN 0
written as ``''`` (the mapping report), counters rendered as quoted strings (one switch), a host id
the model makes up, and the reverse lookup that comes back empty for a WWPN the run served.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel

import context_integrity as ci

WWPNS = [f"c0:50:76:0a:11:7e:00:{n:02d}" for n in range(8)]
HOSTS = [{"host": f"esx-{n:02d}", "wwpn": WWPNS[n]} for n in range(8)]
TOOLS = tuple(
    ci.ToolDefinition(name)
    for name in (
        "host_group_mappings",
        "port_counters",
        "list_hosts",
        "host_paths",
        "fabric_logins",
        "hosts_by_wwpn",
        "port_status",
    )
)


class Triage(BaseModel):
    """The agent's typed answer."""

    port: str
    status: str
    host: str


def port_status(switch: int) -> list[dict[str, Any]]:
    return [
        {"port": "fc1/1", "status": "up"},
        {"port": "fc1/2", "status": "up"},
        {"port": "fc1/3", "status": "down" if switch % 3 else "up"},
    ]


def host_group_mappings(group: int) -> list[dict[str, Any]]:
    luns = [1, 2, 3, 4] if group % 5 else [0, 1, 2, 3]
    # The field bug: LUN 0 is falsy, so it became an empty string.
    return [
        {"host_group": f"vdi-{group}", "initiator": WWPNS[group % 8], "logical_unit_number": lun or ""}
        for lun in luns
    ]


def port_counters(switch: int) -> list[dict[str, Any]]:
    rows = [{"port": f"fc1/{p}", "frames_per_sec": 900 + p, "crc_errors": p % 2} for p in range(1, 4)]
    # The family bug, on one switch model: every number rendered as a quoted string.
    return [{k: str(v) for k, v in row.items()} for row in rows] if switch % 7 == 3 else rows


def host_paths(host: str) -> list[dict[str, Any]]:
    return [{"path": "vmhba2:C0:T1:L0", "state": "active"}] if host.startswith("esx-") else []


def fabric_logins(switch: int) -> list[dict[str, Any]]:
    return [{"switch": f"edge-sw-{switch:02d}", "port": "fc1/3", "wwpn": WWPNS[switch % 8]}]


def hosts_by_wwpn(wwpn: str, *, broken_index: bool) -> list[dict[str, Any]]:
    # The field bug: the index stores WWPNs without colons, so a lookup comes back empty.
    if broken_index:
        return []
    return [{"host": h["host"]} for h in HOSTS if h["wwpn"] == wwpn]


def one_run(n: int) -> None:
    group, switch = n, n
    host = HOSTS[n % 8]["host"] if n % 9 != 4 else "esx-99"  # the model makes one host up
    wwpn = WWPNS[switch % 8]
    with ci.run(f"why can't vdi-{group} see its boot LUN?", agent_name="storage-triage") as run:
        messages: list[ci.Message] = [ci.Message("user", f"Why can't vdi-{group} see its boot LUN?")]

        def step(calls: list[ci.ToolCall], results: list[Any]) -> None:
            with run.request(ci.RequestFrame.of(messages, tools=TOOLS)) as call:
                call.respond(ci.ModelResponse(calls=tuple(calls)))
            messages.append(ci.Message("assistant", "", tool_calls=tuple(calls)))
            for tool_call, result in zip(calls, results, strict=True):
                seen = run.tool_result(
                    tool_call.name, tool_call.call_id, result, arguments=tool_call.arguments
                )
                messages.append(
                    ci.Message("tool", seen, tool_name=tool_call.name, tool_call_id=tool_call.call_id)
                )

        step(
            [
                ci.ToolCall("host_group_mappings", "c1", {"host_group": f"vdi-{group}"}),
                ci.ToolCall("port_counters", "c2", {"switch": f"edge-sw-{switch:02d}"}),
                ci.ToolCall("list_hosts", "c3", {}),
                ci.ToolCall("fabric_logins", "c4", {"switch": f"edge-sw-{switch:02d}"}),
            ],
            [host_group_mappings(group), port_counters(switch), HOSTS, fabric_logins(switch)],
        )
        step(
            [
                ci.ToolCall("host_paths", "c5", {"host": host}),
                ci.ToolCall("hosts_by_wwpn", "c6", {"wwpn": wwpn}),
                ci.ToolCall("port_status", "c7", {"switch": f"edge-sw-{switch:02d}"}),
            ],
            [host_paths(host), hosts_by_wwpn(wwpn, broken_index=n % 6 == 5), port_status(switch)],
        )
        settled = port_status(switch)[2]["status"]
        # The claim defect, in one run of eight: the answer calls the port healthy though the tool said down.
        said = "up" if n % 8 == 7 and settled == "down" else settled
        run.answer(output=Triage(port="fc1/3", status=said, host=host))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recording")
    parser.add_argument("--profile", action="store_true", help="profiling on, content capture off")
    parser.add_argument("--runs", type=int, default=24)
    args = parser.parse_args()
    if args.profile:
        ci.setup(recording_path=args.recording, profile=True)
    else:
        ci.setup(recording_path=args.recording, capture_content=True)
    for n in range(args.runs):
        one_run(n)
    # A fixture's recording must be whole: under a loaded machine the bounded flush at shutdown can
    # leave spans unsent, and the tests would then read fewer runs than were played. Said, not guessed.
    if not ci.flush(timeout_millis=120_000):
        raise SystemExit("the recording could not be flushed whole within 120 s")
    ci.shutdown()


if __name__ == "__main__":
    main()
