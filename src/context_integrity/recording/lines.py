"""Opening a recording and cutting it into lines, whatever the path turns out to be.

Every reader of a file (``report``, ``report -v``, ``--html``, ``--find``, and the trace readers
built on this package) opens it with :func:`open_recording` and reads it with
:func:`recording_lines`:

- only a regular file is read: a FIFO (which would wait for a writer for ever), a device
  (``/dev/zero`` never ends), a socket, a directory, a symlink loop or a file we may not read is
  refused with :class:`RecordingUnreadable`, a sentence saying what the path is;
- lines end at ``\\n`` and nowhere else: U+2028, U+2029 and U+0085, which the recorder writes raw
  inside strings, are text like any other;
- a line longer than :data:`~context_integrity.limits.MAX_RECORDING_LINE_BYTES` is never held
  whole: it is read past in chunks and handed out as an :class:`OverlongLine`, for the reader to
  count and skip.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from ..limits import MAX_RECORDING_LINE_BYTES
from ..paths import RECORDING_ENV_VAR, RECORDING_FILE_NAME, STATE_DIR_NAME, XDG_STATE_HOME_VAR

# How much is read at a time: a line of megabytes is assembled from these, an overlong one skipped.
_CHUNK_BYTES: Final = 1 << 20


class RecordingUnreadable(OSError):
    """A path that is not a recording this library will read: its message says what it is instead."""


@dataclass(frozen=True, slots=True)
class OverlongLine:
    """A line longer than the bound, read past without being held: how long it was, and whether the
    file ended part-way through it."""

    size: int
    terminated: bool


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in a word or two; ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (a named pipe, which would wait for a writer)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_recording(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary, or :class:`RecordingUnreadable` (a
    :class:`FileNotFoundError` or :class:`IsADirectoryError` for those two) saying why not.

    Opened without blocking and looked at before a byte is read, so a FIFO with no writer is refused
    at once instead of holding the reader for ever.
    """
    location = Path(path)
    try:
        descriptor = os.open(
            location, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except FileNotFoundError:
        raise FileNotFoundError(
            f"No recording at {location}. One is written there when an agent instrumented with "
            f"ci.setup() runs without an OTLP endpoint configured; run one first, or pass the path "
            f"of an existing recording (the default path comes from ${RECORDING_ENV_VAR}, else "
            f"${XDG_STATE_HOME_VAR}/{STATE_DIR_NAME}/{RECORDING_FILE_NAME})."
        ) from None
    except IsADirectoryError:
        raise _directory(location) from None
    except PermissionError:
        raise RecordingUnreadable(
            errno.EACCES, f"{location} is not readable by this user (permission denied); nothing was read."
        ) from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise RecordingUnreadable(
                errno.ELOOP,
                f"{location} is a symbolic link that leads back to itself (a loop); nothing was read.",
            ) from None
        kind = _kind_at(location)  # a socket cannot even be opened: say what it is
        if kind is not None:
            raise RecordingUnreadable(
                error.errno or errno.EINVAL,
                f"{location} is {kind}; only a recording file is read, so nothing was read from it.",
            ) from None
        raise RecordingUnreadable(
            error.errno or errno.EIO,
            f"{location} could not be opened ({error.strerror or error}); nothing was read.",
        ) from None
    try:
        mode = os.fstat(descriptor).st_mode
        kind = _kind(mode)
        if kind is not None:
            if stat.S_ISDIR(mode):
                raise _directory(location)
            raise RecordingUnreadable(
                errno.EINVAL,
                f"{location} is {kind}; only a recording file is read, so nothing was read from it.",
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _kind_at(location: Path) -> str | None:
    try:
        return _kind(os.stat(location).st_mode)
    except OSError:
        return None


def _directory(location: Path) -> IsADirectoryError:
    return IsADirectoryError(
        errno.EISDIR,
        f"{location} is a directory; pass the recording file inside it (normally named {RECORDING_FILE_NAME}).",
    )


def recording_lines(
    handle: BinaryIO, max_line_bytes: int = MAX_RECORDING_LINE_BYTES
) -> Iterator[bytes | OverlongLine]:
    """The lines of ``handle``, each ending in its ``\\n`` (the last one may not): split on ``\\n``
    only. A line longer than ``max_line_bytes`` comes out as an :class:`OverlongLine`: no more than
    the bound of it is ever held, and the rest is read past in chunks.

    An error reading the file part-way (a disk gone, an NFS timeout) raises :class:`RecordingUnreadable`.
    """
    try:
        while True:
            line = handle.readline(max_line_bytes + 1)
            if not line:
                return
            if len(line) <= max_line_bytes or line.endswith(b"\n"):
                yield line
                continue
            size = len(line)
            del line
            terminated = False
            while True:
                part = handle.readline(_CHUNK_BYTES)
                size += len(part)
                if not part or part.endswith(b"\n"):
                    terminated = part.endswith(b"\n")
                    break
            yield OverlongLine(size, terminated=terminated)
    except OSError as error:
        raise RecordingUnreadable(
            error.errno or errno.EIO, f"reading the recording failed part-way ({error.strerror or error})"
        ) from None
