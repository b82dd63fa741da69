"""The shared text helpers every message and attribute goes through.

The laws under test: clipping marks its cut and never exceeds the limit; bounded JSON is a prefix
of the full encoding and stops early on a huge value (it never encodes the whole payload); a value
that cannot be rendered still renders, without raising.
"""

from __future__ import annotations

import json

from context_integrity.limits import MAX_QUOTED_CHARS
from context_integrity.text import bounded_json, clip, plural, render_value


def test_clip_keeps_short_text_and_marks_a_cut() -> None:
    assert clip("abc", 5) == "abc"
    assert clip("abcdefgh", 5) == "abcd…"
    assert len(clip("x" * 10_000)) == MAX_QUOTED_CHARS


def test_plural() -> None:
    assert plural(1, "row") == "1 row"
    assert plural(2, "row") == "2 rows"


def test_bounded_json_is_a_prefix_of_the_full_encoding() -> None:
    value = {"rows": [{"id": i, "name": f"host-{i}"} for i in range(50)]}
    full = json.dumps(value, ensure_ascii=False)
    head = bounded_json(value, 100)
    assert full.startswith(head)
    assert 100 < len(head) < len(full)


class _Counting:
    """A value whose rendering is counted, to prove the encoder stopped early."""

    rendered = 0

    def __str__(self) -> str:
        _Counting.rendered += 1
        return "cell"


def test_bounded_json_stops_encoding_once_it_has_enough() -> None:
    _Counting.rendered = 0
    huge = [_Counting() for _ in range(100_000)]
    bounded_json(huge, 200)
    assert _Counting.rendered < 1_000


def test_render_value_quotes_strings_and_survives_hostile_objects() -> None:
    assert render_value("") == '""'
    assert render_value(3) == "3"
    assert render_value(True) == "True"

    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert render_value(Hostile()) == "<unprintable Hostile>"
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert render_value(cyclic).startswith("[[")
