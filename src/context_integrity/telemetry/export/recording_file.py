"""The recording file: whole lines appended, shared safely between processes, bounded in size.

Every record goes out as one ``write()`` of a whole line on a descriptor opened with
``O_APPEND``, so two processes appending to one recording never interleave partial lines.
Around that write each writer takes an advisory lock on the file (``flock``), waiting for it at
most :data:`~context_integrity.limits.RECORDING_LOCK_WAIT_MILLIS`; under the lock it

- repairs a torn line: when the file does not end in a newline (a writer died part-way through
  its line), the new record starts with one, so the torn piece costs only itself;
- rotates: when the line would take the file past its size, the file is renamed to
  ``<name>.1`` (replacing the one before) and a new file begins.

A writer that cannot get the lock in time still writes its line (appends stay whole); it only
skips the repair and the rotation check, which the next writer does. The file is opened for
each write, so a recording deleted or rotated by another process is simply started again.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from pathlib import Path
from typing import Final

from ...limits import MAX_RECORDING_BYTES, MIN_RECORDING_BYTES, RECORDING_BACKUPS, RECORDING_LOCK_WAIT_MILLIS
from ...paths import rotated_path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: appends still go out whole
    fcntl = None  # type: ignore[assignment]

RECORDING_MAX_BYTES_ENV_VAR: Final = "CONTEXT_INTEGRITY_RECORDING_MAX_BYTES"
_FILE_MODE: Final = 0o600  # a recording can quote tool results: the user's eyes only
_DIR_MODE: Final = 0o700
# Read too: the last byte tells whether a writer left a torn line.
_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
_WRITE_ONLY: Final = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
_LOCK_POLL_S: Final = 0.005


def recording_max_bytes() -> int:
    """The size the recording rotates at: ``$CONTEXT_INTEGRITY_RECORDING_MAX_BYTES``, else
    :data:`~context_integrity.limits.MAX_RECORDING_BYTES`.

    Raises :class:`ValueError` naming the variable and the fix for a value that is not a
    whole number of bytes of at least :data:`~context_integrity.limits.MIN_RECORDING_BYTES`.
    """
    text = os.environ.get(RECORDING_MAX_BYTES_ENV_VAR, "").strip()
    if not text:
        return MAX_RECORDING_BYTES
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = -1
    if value < MIN_RECORDING_BYTES:
        raise ValueError(
            f"${RECORDING_MAX_BYTES_ENV_VAR} is {text[:40]!r}; it must be a whole number of bytes, at "
            f"least {MIN_RECORDING_BYTES} (the default is {MAX_RECORDING_BYTES}). Fix the variable, "
            "or unset it for the default."
        )
    return value


def _lock(descriptor: int, wait_s: float) -> bool:
    """Take the advisory lock on the file, waiting at most ``wait_s``; ``False`` when not taken."""
    if fcntl is None:
        return False
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_LOCK_POLL_S)
        except OSError:  # a filesystem without locks (some network mounts)
            return False


def _last_byte(descriptor: int, size: int) -> bytes | None:
    try:
        return os.pread(descriptor, 1, size - 1)
    except OSError:  # not readable (opened write-only): no repair, the write still goes out whole
        return None


def _write_all(descriptor: int, data: bytes) -> None:
    # One write() for the whole line; a second only when the kernel took part (a full disk).
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


class RecordingFile:
    """Appends whole lines to one recording; thread-safe. Raises :class:`OSError` when it cannot write."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int | None = None,
        backups: int = RECORDING_BACKUPS,
        lock_wait_millis: float = RECORDING_LOCK_WAIT_MILLIS,
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes if max_bytes is not None else recording_max_bytes()
        self.backups = max(backups, 1)
        self._lock_wait_s = lock_wait_millis / 1000
        self._threads = threading.Lock()
        self.rotations = 0

    def backup(self, generation: int = 1) -> Path:
        """``<name>.<generation>``: where rotation moved an older part of the recording."""
        return rotated_path(self.path, generation)

    def append(self, line: bytes) -> None:
        """Append one line (it must end in a newline) as one write."""
        with self._threads:
            descriptor, locked = self._open_locked()
            try:
                status = os.fstat(descriptor)
                # Rotation and repair are for a regular file (a recording_path may name a pipe).
                regular = locked and stat.S_ISREG(status.st_mode)
                size = status.st_size
                if regular and size and self.max_bytes and size + len(line) > self.max_bytes:
                    self._rotate()  # still holding the lock of the file it renames
                    os.close(descriptor)
                    descriptor = -1
                    descriptor, regular = self._open_locked()
                    size = os.fstat(descriptor).st_size
                if regular and size and _last_byte(descriptor, size) not in (b"\n", None):
                    line = b"\n" + line  # end the torn line a writer left, so it costs only itself
                _write_all(descriptor, line)
            finally:
                if descriptor >= 0:
                    os.close(descriptor)  # closing releases the lock

    def _open(self) -> int:
        try:
            return os.open(self.path, _FLAGS, _FILE_MODE)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=_DIR_MODE)
            return os.open(self.path, _FLAGS, _FILE_MODE)
        except PermissionError:  # a file we may write but not read: append, without the repair
            return os.open(self.path, _WRITE_ONLY, _FILE_MODE)

    def _open_locked(self) -> tuple[int, bool]:
        """The file, locked when the lock came in time. Another process may rotate the file while
        this one waits for its lock: then the descriptor names the old file, and it is reopened."""
        for _ in range(3):
            descriptor = self._open()
            locked = _lock(descriptor, self._lock_wait_s)
            if not locked:
                return descriptor, False
            try:
                same = os.stat(self.path).st_ino == os.fstat(descriptor).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return descriptor, True
            os.close(descriptor)
        return self._open(), False

    def _rotate(self) -> None:
        # Held under the lock of the file being rotated: other writers wait on it, then find a new file.
        for generation in range(self.backups, 1, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(self.backup(generation - 1), self.backup(generation))
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, self.backup(1))
            self.rotations += 1
