"""``setup()``: OpenTelemetry for context-integrity in one call.

``setup()`` validates its options and dials before anything is built (:mod:`.options`,
:class:`~context_integrity.judge.Dials`), builds the pipeline once (:mod:`.pipeline`) and keeps
it as the process's :class:`~.instrumentation.Instrumentation`, flushed and shut down at exit
within a bound. Calling ``setup()`` again reconfigures the dials (and which frameworks are
instrumented) only; it never adds a second exporter or processor.

``instrument`` arms the framework integrations listed in
:data:`context_integrity.integrations.SUPPORTED`: every importable one by default, the listed ones,
or none. An integration that fails to arm is logged once and never fails ``setup()``.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import inspect
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from ..judge import Dials, SetupError
from ..judge.dials import dial_parameters, dial_specs, dials_doc, unknown_option
from ..limits import EXIT_FLUSH_MILLIS
from .arming import AUTO, arm_integrations, disarm_all, selected_integrations
from .export.options import refuse_changed, validated_options
from .export.pipeline import build
from .instrumentation import CONTRACTS as CONTRACTS  # its home; integrations and tests read it here
from .instrumentation import Instrumentation, instrumentation_version

if TYPE_CHECKING:
    from ..contracts.file import Contracts

logger = logging.getLogger("context_integrity")


def __getattr__(name: str) -> str:
    if name == "VERSION":  # the old module constant, computed when first read
        return instrumentation_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_lock = threading.Lock()
_state: Instrumentation | None = None
_said_where = False

# Set on the log record that says where traces go, so a program that says it in its own words
# (the demo) can leave the record out with :func:`not_where_traces_go`.
WHERE_RECORD: Final = "context_integrity_where"


def not_where_traces_go(record: logging.LogRecord) -> bool:
    """A logging filter passing every record but the one that says where traces go."""
    return not getattr(record, WHERE_RECORD, False)


def current() -> Instrumentation | None:
    """The instrumentation ``setup()`` configured, or ``None`` before it is called."""
    return _state


def _say_where(state: Instrumentation) -> None:
    """Where traces go: a warning, once per process, when they fall back to the local recording (no
    endpoint configured: the one case a user may not expect); information otherwise."""
    global _said_where
    if state.traces_recorded and not _said_where:
        _said_where = True
        logger.warning("context_integrity: %s", state.destination, extra={WHERE_RECORD: True})
    else:
        logger.info("context_integrity: %s", state.destination, extra={WHERE_RECORD: True})


def setup(
    *,
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    recording_path: str | os.PathLike[str] | None = None,
    log_events: bool = False,
    evaluation_events: bool | Literal["all"] = False,
    phoenix_annotations: str | None = None,
    contracts: str | os.PathLike[str] | None = None,
    capture_content: bool = False,
    redact: Callable[[str], str] | None = None,
    tracer_provider: Any | None = None,
    meter_provider: Any | None = None,
    logger_provider: Any | None = None,
    instrument: str | Iterable[str] = AUTO,
    **dials: Any,
) -> Instrumentation:
    """Configure context-integrity and OpenTelemetry in one call.

        Dials (each defaults to the byte-identical choice):

    {dials}

        ``contracts``: the path of a contracts file (TOML, or a ``pyproject.toml`` with a
        ``[tool.context-integrity]`` table) whose declarations join the process's, as if each
        were declared with ``declare_tool``; ``$CONTEXT_INTEGRITY_CONTRACTS`` names one when this
        is left out. A bad file raises :class:`~context_integrity.DeclarationError` naming the file,
        the key and the fix.

        ``instrument``: ``"auto"`` (the default) instruments every supported framework that is
        installed; a list of names (see ``context_integrity.integrations.SUPPORTED``) only those;
        ``()`` none.

        Raises :class:`SetupError` (a ``ValueError``) for a dial, option or environment value
        outside its vocabulary; nothing is configured in that case. A second call
        changes the dials and keeps the exporters and processors of the first.
    """
    global _state
    for name in dials:
        if name not in dial_specs():
            raise unknown_option(name, tuple(inspect.signature(setup).parameters))
    validated = Dials.validated(**dials)
    options = validated_options(
        service_name=service_name,
        endpoint=endpoint,
        protocol=protocol,
        headers=headers,
        recording_path=recording_path,
        log_events=log_events,
        evaluation_events=evaluation_events,
        capture_content=capture_content,
        redact=redact,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        contracts=contracts,
    )
    declarations = _contracts_file(options.contracts)
    if phoenix_annotations is not None and not (
        isinstance(phoenix_annotations, str) and phoenix_annotations.startswith(("http://", "https://"))
    ):
        raise SetupError(
            f"phoenix_annotations must be Phoenix's base URL, such as 'http://localhost:6006' "
            f"(got {phoenix_annotations!r:.200})."
        )
    frameworks, auto = selected_integrations(instrument)
    options = dataclasses.replace(options, phoenix_annotations=phoenix_annotations)
    with _lock:
        if _state is not None:
            refuse_changed(_state.options, options)
            _declare(declarations)
            _state.dials = validated
            _state.capture_content = capture_content
            _state.redact = redact
            arm_integrations(frameworks, auto=auto)
            return _state
        installs: list[Callable[[], None]] = []
        before = CONTRACTS.snapshot()
        try:
            _declare(declarations)
            built = build(
                dials=validated,
                service_name=service_name,
                endpoint=endpoint,
                protocol=protocol,
                headers=headers,
                recording_path=recording_path,
                log_events=log_events,
                evaluation_events=evaluation_events,
                phoenix_annotations=phoenix_annotations,
                capture_content=capture_content,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                logger_provider=logger_provider,
                installs=installs,
            )
        except BaseException:
            _discard_partial(installs)
            CONTRACTS.restore(before)
            raise
        for install in installs:
            install()
        built.options = options
        built.redact = redact
        _state = state = built
        _arm_exit_shutdown()
        arm_integrations(frameworks, auto=auto)
    _say_where(state)
    return state


def _contracts_file(explicit: str | os.PathLike[str] | None) -> Contracts | None:
    """The contracts file ``setup()`` reads: the one named, else ``$CONTEXT_INTEGRITY_CONTRACTS``'s.
    The reader (and TOML's) load only when there is a file to read."""
    from ..contracts.file import CONTRACTS_ENV_VAR, find_contracts, load_contracts

    if explicit is None and not os.environ.get(CONTRACTS_ENV_VAR, "").strip():
        return None
    found = find_contracts(explicit)
    return None if found is None else load_contracts(found.path)


def _declare(declarations: Contracts | None) -> None:
    if declarations is None:
        return
    CONTRACTS.declare_all(
        declarations.tools,
        declarations.claims,
        declarations.toolsets,
        again=f", and contracts file {declarations.source} declares it again",
    )
    logger.info(
        "context_integrity: declarations read from %s (%d tools, %d claims contracts, %d toolsets)",
        declarations.source,
        len(declarations.tools),
        len(declarations.claims),
        len(declarations.toolsets),
    )


_exit_armed = False


def _exit_shutdown() -> None:
    """At interpreter exit: flush and shut down what setup() made, within EXIT_FLUSH_MILLIS."""
    state = _state
    if state is not None:
        state.shutdown(EXIT_FLUSH_MILLIS)


def _arm_exit_shutdown() -> None:
    global _exit_armed
    if not _exit_armed:
        _exit_armed = True
        atexit.register(_exit_shutdown)


def _discard_partial(installs: list[Callable[[], None]]) -> None:
    """Shut down the providers a failed setup() made (none was installed globally)."""
    for install in installs:
        provider: Any = getattr(install, "args", (None,))[0]
        with contextlib.suppress(Exception):
            provider.shutdown()


# The dials are declared once, on :class:`Dials`; setup()'s signature and docstring are read from there.
setup.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        *(
            p
            for p in inspect.signature(setup).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ),
        *dial_parameters(),
    ],
    return_annotation="Instrumentation",
)
setup.__doc__ = (setup.__doc__ or "").replace("{dials}", dials_doc())


def shutdown() -> None:
    """Flush and shut down what ``setup()`` created, and forget it (the next ``setup()`` starts anew).

    Providers the application owns are flushed but never shut down; the framework integrations
    ``setup()`` armed are disarmed.
    """
    global _state
    with _lock:
        state, _state = _state, None
        disarm_all()
    if state is not None:
        state.shutdown()


def flush(timeout_millis: int = 10_000) -> bool:
    """Export everything buffered now (call before a short-lived process exits). Never raises.

    Returns within ``timeout_millis`` whatever the exporter does; ``False`` (and one log line
    counting the spans not sent) when it could not finish in time.
    """
    state = _state
    return state.force_flush(timeout_millis) if state is not None else True
