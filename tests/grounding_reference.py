"""The reference for the grounding checks' reading of a request: the full scan, kept as it was.

Before the judge indexed the conversation, every request was read whole: the
frame split by author (:func:`~context_integrity.loop.frame_ground`), each
text lowered, and a value counted as served when it was a substring of one of
them. The incremental index must answer exactly as this does; the property
tests in ``test_ground_index.py`` hold it to that. Kept here, apart from the
library, so the reference cannot drift with the code it judges.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_integrity.loop import RequestFrame, frame_ground, tool_names_present

_SEPARATOR = "\x00"


class FullScan:
    """Lowered texts searched by substring, no match straddling two texts: the old ``_Corpus``."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = [text.lower() for text in texts if isinstance(text, str) and text]
        self.joined = _SEPARATOR.join(self.texts)
        self.count = len(self.texts)

    def contains(self, needle: str) -> bool:
        if _SEPARATOR in needle:
            return any(needle in text for text in self.texts)
        return needle in self.joined


def reference_corpora(frame: RequestFrame) -> tuple[FullScan, FullScan]:
    """(what the request served, the model's own earlier text), read from the whole frame."""
    ground = frame_ground(frame)
    return FullScan(ground.grounded), FullScan(ground.assistant)


def reference_present(frame: RequestFrame) -> frozenset[str]:
    return tool_names_present(frame)
