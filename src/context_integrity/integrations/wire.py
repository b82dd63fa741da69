"""The wire reader: the tool names that actually crossed to the provider, read from the body.

An httpx event hook, installed in one call on the clients the agent uses::

    reader = ci.install_wire_reader(openai_client, anthropic_client)   # SDK clients or httpx clients

For every request those clients send while a model call of a run is open, the hook reads the
FINAL serialized JSON body -- after every SDK helper, transform and proxy client had its say --
and hands the tool names it carries to that model call's wire seam, where they are compared with
the tools the agent composed (invariant-violation @ wire).

Bodies it reads, by the request path:

- ``.../chat/completions`` (OpenAI-compatible chat): ``tools[].function.name`` (and the legacy
  ``functions[].name``);
- ``.../responses`` (OpenAI responses): ``tools[].name`` (built-in tools without a name carry
  none);
- ``.../messages`` (Anthropic messages): ``tools[].name``.

A body without a ``tools`` field is a stated zero (Anthropic rejects an empty array, so clients
omit it). A body it cannot read -- another provider's path, a streamed body, not JSON, ``tools``
not a list -- is reported as unreadable, so the call is ``unreachable``, never a pass.

Works with ``httpx`` and with same-shaped clients (the OpenAI SDK's own ``httpx2``), by duck type:
nothing here imports an HTTP library. The hook never raises into the request.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..judge import SetupError
from ..telemetry.emit import record_internal_error
from ..telemetry.run.model_call import current_model_call
from ..telemetry.setup import CONTRACTS

OPENAI_CHAT: Final = "OpenAI chat completions request body"
OPENAI_RESPONSES: Final = "OpenAI responses request body"
ANTHROPIC_MESSAGES: Final = "Anthropic messages request body"
UNKNOWN_BODY: Final = "a request body no wire reader can read"

_labels = itertools.count(1)


def _named(entries: object, name_of: Callable[[Mapping[str, Any]], object]) -> frozenset[str] | None:
    if not isinstance(entries, list):
        return None
    names: set[str] = set()
    for entry in entries:
        if isinstance(entry, Mapping):
            name = name_of(entry)
            if isinstance(name, str):  # non-string names are dropped: they name nothing
                names.add(name)
    return frozenset(names)


def _chat_name(entry: Mapping[str, Any]) -> object:
    function = entry.get("function")
    return function.get("name") if isinstance(function, Mapping) else entry.get("name")


def _plain_name(entry: Mapping[str, Any]) -> object:
    return entry.get("name")


def read_wire_body(path: str, body: bytes | str) -> tuple[frozenset[str] | None, str]:
    """The tool names a serialized request body carries, and which kind of body it was.

    ``None`` names when the body cannot be read. Never raises.
    """
    try:
        clean = path.rstrip("/")
        if clean.endswith("/chat/completions"):
            source = OPENAI_CHAT
        elif clean.endswith("/responses"):
            source = OPENAI_RESPONSES
        elif clean.endswith("/messages"):
            source = ANTHROPIC_MESSAGES
        else:
            return None, UNKNOWN_BODY
        document = json.loads(body)
        if not isinstance(document, Mapping):
            return None, source
        if source == OPENAI_CHAT:
            if "tools" not in document and "functions" not in document:
                return frozenset(), source
            tools = _named(document.get("tools", []), _chat_name)
            functions = _named(document.get("functions", []), _plain_name)
            if tools is None or functions is None:
                return None, source
            return tools | functions, source
        if "tools" not in document:
            return frozenset(), source
        return _named(document["tools"], _plain_name), source
    except Exception:  # not JSON, not UTF-8, a hostile body: unreadable, never a crash
        return None, UNKNOWN_BODY


def _on_request(request: Any) -> None:
    try:
        call = current_model_call()
        if call is None:
            return
        try:
            body = request.content  # a streamed body that was never read raises here
            path = str(request.url.path)
        except Exception:
            call.wire(None, source=UNKNOWN_BODY)
            return
        names, source = read_wire_body(path, body)
        call.wire(names, source=source)
    except Exception as ours:
        record_internal_error(None, "reading the wire", ours)


async def _on_request_async(request: Any) -> None:
    _on_request(request)


# Where an SDK client keeps its httpx client, and where a framework's chat model keeps its SDK
# clients (LangChain's ChatOpenAI / ChatAnthropic: ``root_client``, ``root_async_client``, ``client``).
_INNER: Final = ("_client", "root_client", "root_async_client", "client", "async_client", "_async_client")


def _is_http_client(candidate: object) -> bool:
    hooks = getattr(candidate, "event_hooks", None)
    return isinstance(hooks, Mapping) and callable(getattr(candidate, "send", None))


def _http_clients_of(client: object) -> list[Any]:
    """The httpx-shaped clients inside an SDK client or a framework's chat model (or the client itself)."""
    found: list[Any] = []
    frontier: list[object] = [client]
    for _ in range(3):  # a chat model -> its SDK client -> its httpx client
        following: list[object] = []
        for candidate in frontier:
            if _is_http_client(candidate):
                if all(candidate is not seen for seen in found):
                    found.append(candidate)
                continue
            for attribute in _INNER:
                try:
                    inner = getattr(candidate, attribute, None)
                except Exception:  # a property that raises is not a client
                    inner = None
                if inner is not None and inner is not candidate:
                    following.append(inner)
        frontier = following
    if not found:
        raise SetupError(
            f"install_wire_reader(): cannot find an httpx client in {type(client).__name__}. Pass an OpenAI or "
            "Anthropic SDK client, a LangChain chat model built on one, or the httpx.Client / "
            "httpx.AsyncClient it sends requests with."
        )
    return found


class WireReader:
    """The installed reader: :meth:`uninstall` takes it off every client it was put on."""

    def __init__(self, clients: list[tuple[Any, Callable[..., Any]]], label: str) -> None:
        self._clients = clients
        self.label = label

    def uninstall(self) -> None:
        for http, hook in self._clients:
            try:
                hooks = {key: list(value) for key, value in http.event_hooks.items()}
                hooks["request"] = [h for h in hooks.get("request", []) if h is not hook]
                http.event_hooks = hooks
            except Exception as ours:
                record_internal_error(None, "uninstalling a wire reader", ours)
        self._clients = []
        CONTRACTS.forget_wire_reader(self.label)


def install_wire_reader(*clients: object) -> WireReader:
    """Read the tool names from every request body these clients send (the wire seam).

    Each client is an OpenAI or Anthropic SDK client, sync or async, a framework chat model built on
    one (every httpx client inside it is read), or an httpx client. Raises
    :class:`~context_integrity.SetupError` for a client with no httpx client inside. Installing
    twice on one client adds one hook. From the next run on, the wire row is armed: a model call
    whose body no reader read is ``unreachable``.
    """
    if not clients:
        raise SetupError("install_wire_reader(): pass at least one SDK or httpx client to read the wire of.")
    installed: list[tuple[Any, Callable[..., Any]]] = []
    for http in [found for client in clients for found in _http_clients_of(client)]:
        hook: Callable[..., Any] = (
            _on_request_async if inspect.iscoroutinefunction(http.send) else _on_request
        )
        hooks = {key: list(value) for key, value in http.event_hooks.items()}
        request_hooks = hooks.setdefault("request", [])
        if hook not in request_hooks:
            request_hooks.append(hook)
            http.event_hooks = hooks
        installed.append((http, hook))
    label = f"wire-reader-{next(_labels)}"
    CONTRACTS.declare_wire_reader(label)
    return WireReader(installed, label)
