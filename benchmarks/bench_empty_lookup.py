"""One empty lookup after N producer results: the run's producer corpus against the old rescan.

Prints per-lookup milliseconds, interleaved over rounds (median and min), for the corpus
(lowered and shelved once, as producers serve) and the reference (lower and scan every text on
every lookup, what the check did before).
"""

from __future__ import annotations

import statistics
import time

from context_integrity.checks.empty_lookup import ProducedCorpus

N = 2000
TEXT = " ".join(f"host-{i:05d} lun {i} status ok" for i in range(400))  # ~12 kB per result


def reference(pairs: list[tuple[str, str]], needle: str) -> str | None:
    grounds = [(p, t.lower()) for p, t in pairs]
    return next((name for name, text in grounds if needle in text), None)


def main() -> None:
    pairs = [("producer", f"{TEXT} id-{i:06d}") for i in range(N)]
    corpus = ProducedCorpus()
    for index, (name, text) in enumerate(pairs):
        corpus.add(name, str(index), text)
    needles = [f"id-{i:06d}" for i in (0, N // 2, N - 1)] + ["absent-value"]
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(5):
        for needle in needles:
            start = time.perf_counter()
            corpus.carrier(needle, ("producer",))
            ours.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            reference(pairs, needle)
            theirs.append((time.perf_counter() - start) * 1000)
    print(f"{N} producer results of {len(TEXT)} chars; ms per lookup (median / min)")
    print(f"  corpus    {statistics.median(ours):8.2f} / {min(ours):8.2f}")
    print(f"  rescan    {statistics.median(theirs):8.2f} / {min(theirs):8.2f}")
    print(f"  ratio     {statistics.median(theirs) / statistics.median(ours):8.1f}x")


if __name__ == "__main__":
    main()
