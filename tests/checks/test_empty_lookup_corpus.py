"""Item 10 of issue 8: an empty lookup costs what it needs, and means exactly what it meant.

The run's producer corpus is lowered and shelved once, as producers serve it; a lookup searches
it. These tests hold the corpus to the reference rule (a value counts as served when it is a
case-insensitive substring of a declared producer's text; the producer named is the one whose
earliest such text is oldest), and its bounds.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_integrity import limits
from context_integrity.checks.empty_lookup import ProducedCorpus


def _reference(needle: str, pairs: list[tuple[str, str]], producers: tuple[str, ...]) -> str | None:
    return next((name for name, text in pairs if name in producers and text and needle in text.lower()), None)


alphabet = st.sampled_from(list("abAB-1\x00 é"))
texts = st.text(alphabet, max_size=12)
pairs = st.lists(st.tuples(st.sampled_from(["p", "q", "r"]), texts), max_size=12)


@settings(max_examples=400, deadline=None)
@given(
    pairs=pairs, needle=st.text(alphabet, min_size=1, max_size=4), producers=st.sets(st.sampled_from("pqr"))
)
def test_the_corpus_names_the_producer_the_reference_rule_names(
    pairs: list[tuple[str, str]], needle: str, producers: set[str]
) -> None:
    declared = tuple(sorted(producers))
    corpus = ProducedCorpus.of(pairs)
    assert corpus.carrier(needle.lower(), declared) == _reference(needle.lower(), pairs, declared)
    assert corpus.serves_any(declared) == any(name in declared and text for name, text in pairs)


def test_the_corpus_is_bounded_in_texts_and_characters() -> None:
    corpus = ProducedCorpus()
    big = "x" * limits.MAX_SERVED_TEXT_CHARS
    for index in range(limits.MAX_PRODUCED_CHARS_PER_RUN // limits.MAX_SERVED_TEXT_CHARS + 50):
        corpus.add("p", f"k{index}", big)
    assert len(corpus) * limits.MAX_SERVED_TEXT_CHARS <= limits.MAX_PRODUCED_CHARS_PER_RUN
    for index in range(limits.MAX_SERVED_RESULTS_PER_RUN + 10):
        corpus.add("q", f"s{index}", "id")
    assert len(corpus) == limits.MAX_SERVED_RESULTS_PER_RUN
    assert corpus.carrier("x", ("p",)) is None  # the big texts were the oldest, and are gone
    assert corpus.carrier("id", ("q",)) == "q"
