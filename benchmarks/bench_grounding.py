"""How unsupported-argument and empty-lookup scale with the size of the request.

Prints the time per check call at the reference shape (200 messages, ~100 KB,
20 arguments) and at 2x / 4x / 8x the corpus, and each ratio to the base. A
linear check prints ratios no worse than about 2 / 4 / 8 (lower when served
needles are found early); a quadratic one would print 4 / 16 / 64. The base
time is printed too: lowering the corpus once per argument instead of once per
call would keep the ratios but multiply it. No assertion: run it and read it.

    PYTHONPATH=src python benchmarks/bench_grounding.py
"""

from __future__ import annotations

import timeit

from context_integrity.checks.empty_lookup import check_empty_lookup
from context_integrity.checks.unsupported_argument import ArmedCall, check_unsupported_arguments

ARGUMENTS = {f"a{i}": f"HOST-{i * 13:05d}" for i in range(20)}


def corpus(scale: int) -> list[str]:
    # ~500 characters per message, 200 messages per unit of scale: ~100 KB at scale 1.
    return [f"row {i}: " + "lorem ipsum dolor " * 27 + f"host-{i:05d}" for i in range(200 * scale)]


def time_unsupported(grounded: list[str]) -> float:
    call = ArmedCall("lookup", "c1", ARGUMENTS, ("list_hosts",), frozenset())
    runs = 50
    total = timeit.timeit(
        lambda: check_unsupported_arguments(calls=[call], grounded=grounded, assistant=grounded[:20]),
        number=runs,
    )
    return total / runs


def time_empty_lookup(grounded: list[str]) -> float:
    produced = [("list_hosts", text) for text in grounded]
    runs = 50
    total = timeit.timeit(
        lambda: check_empty_lookup(
            tool_name="lookup",
            call_id="c1",
            arguments=ARGUMENTS,
            arguments_from=("list_hosts",),
            result=[],
            produced=produced,
        ),
        number=runs,
    )
    return total / runs


def main() -> None:
    for name, timer in (("unsupported-argument", time_unsupported), ("empty-lookup", time_empty_lookup)):
        base = timer(corpus(1))
        print(f"{name}: {base * 1e3:.2f} ms per call at 200 messages / ~100 KB / 20 arguments")
        for scale in (2, 4, 8):
            print(f"  x{scale} corpus: ratio {timer(corpus(scale)) / base:.2f}")


if __name__ == "__main__":
    main()
