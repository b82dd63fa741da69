"""What a trace read could not use, said once each and bounded: nothing is dropped silently.

Sources, the detector and the assembler each say what they skipped (a line that is not JSON, a span
no dialect reads, a span whose parent is not in the trace) through one :class:`Problems`; the first
:data:`~context_integrity.limits.MAX_LISTED_PROBLEMS` are kept word for word, the rest counted, so a
source of garbage cannot fill memory.
"""

from __future__ import annotations

from ..limits import MAX_LISTED_PROBLEMS


class Problems:
    """The problems of one read: ``listed`` word for word, ``unlisted`` counted past the limit."""

    __slots__ = ("listed", "unlisted")

    def __init__(self) -> None:
        self.listed: list[str] = []
        self.unlisted = 0

    def say(self, text: str) -> None:
        if len(self.listed) < MAX_LISTED_PROBLEMS:
            self.listed.append(text)
        else:
            self.unlisted += 1

    def __len__(self) -> int:
        return len(self.listed) + self.unlisted
