"""IdentityMemo: what was made from an object is remembered for that very object, within a bound.
ToldOnce: each key is told once, and past the bound no key is told or remembered."""

from __future__ import annotations

from context_integrity._memo import IdentityMemo, ToldOnce


def test_the_same_object_is_made_once_and_an_equal_one_is_made_again() -> None:
    made: list[object] = []
    memo: IdentityMemo[list[int], int] = IdentityMemo(8)

    def make(key: list[int]) -> int:
        made.append(key)
        return len(made)

    first = [1, 2]
    assert memo.of(first, make) == 1
    assert memo.of(first, make) == 1
    assert memo.of([1, 2], make) == 2, "equal is not the same: identity decides"
    assert made == [[1, 2], [1, 2]]


def test_past_the_bound_the_memory_starts_over_and_holds_no_more_than_the_bound() -> None:
    memo: IdentityMemo[object, int] = IdentityMemo(3)
    keys = [object() for _ in range(4)]
    for i, key in enumerate(keys):

        def make(_k: object, i: int = i) -> int:
            return i

        memo.of(key, make)
    assert len(memo._entries) == 1  # the fourth key cleared the three before it
    assert memo.of(keys[0], lambda _k: 99) == 99, "forgotten, so made again"


def test_a_key_whose_id_is_reused_by_another_object_is_not_mistaken_for_it() -> None:
    memo: IdentityMemo[object, str] = IdentityMemo(8)
    first = object()
    memo.of(first, lambda _k: "first")
    # The memo holds the key, so its id cannot be reused while remembered; a stale entry under a
    # reused id (as after the key's death) is told apart by identity all the same.
    impostor = object()
    memo._entries[id(impostor)] = (first, "first")
    assert memo.of(impostor, lambda _k: "impostor") == "impostor"


def test_each_key_is_told_once_and_past_the_bound_none_is_told_or_remembered() -> None:
    told: ToldOnce[str] = ToldOnce(2)
    assert told.first("a") and not told.first("a")
    assert told.first("b")
    assert not told.first("c"), "the bound is reached: a new key is not told"
    assert "c" not in told and len(told) == 2, "nor remembered: the memory stays within the bound"
    told.clear()
    assert told.first("a") and len(told) == 1
