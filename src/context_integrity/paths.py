"""Where the local recording lives.

A leaf module (standard library only): the telemetry that writes the
recording and the reader that reads it back both ask it for the default path,
so neither has to import the other.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

RECORDING_ENV_VAR: Final = "CONTEXT_INTEGRITY_RECORDING"
XDG_STATE_HOME_VAR: Final = "XDG_STATE_HOME"
STATE_DIR_NAME: Final = "context-integrity"
RECORDING_FILE_NAME: Final = "recording.otlp.jsonl"


def default_recording_path() -> Path:
    """Where the local recording is written and read when no path is given.

    ``$CONTEXT_INTEGRITY_RECORDING`` if set, else
    ``$XDG_STATE_HOME/context-integrity/recording.otlp.jsonl`` with
    ``XDG_STATE_HOME`` defaulting to ``~/.local/state``. A relative
    ``XDG_STATE_HOME`` is ignored, as the XDG base-directory rules require.
    """
    explicit = os.environ.get(RECORDING_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    state_home = os.environ.get(XDG_STATE_HOME_VAR)
    base = Path(state_home) if state_home and os.path.isabs(state_home) else Path.home() / ".local" / "state"
    return base / STATE_DIR_NAME / RECORDING_FILE_NAME


def rotated_path(path: str | os.PathLike[str], generation: int = 1) -> Path:
    """``<recording>.<generation>``: where rotation moved an older part of a recording."""
    location = Path(path)
    return location.with_name(f"{location.name}.{generation}")
