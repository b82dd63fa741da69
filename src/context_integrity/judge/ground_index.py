"""What the requests of one run served, indexed as the conversation grows.

Frames are append-mostly: request n+1 holds request n's messages (the same
objects, or equal copies) plus a few new ones, minus whatever a window or a
compaction evicted. Reading every frame whole made a run's grounding cost grow
with the square of its turns. :class:`FrameIndex` mirrors the last frame it was
shown and, for the next one, renders and indexes only the messages it has not
seen and forgets only the ones that left, so each request costs what it added.

Recognising a message: by identity first (the common case: the host keeps its
history list and appends), else by content: a new object whose lowered text is
already indexed only bumps that text's count (the text is rendered and hashed,
which is C-speed, but not re-tokenised). Telling old from new is one C-level
pass over the messages (an identity comparison of the prefix when the frame
only grew, set differences of their ids when something left); only a message inserted in the middle makes
the mirror walk the whole frame again.

THE SUBSTRING QUERY. unsupported-argument asks "is this lowered value a
substring of some served text?" -- exactly ``needle in text.lower()`` for some
text, nothing fuzzier. :class:`SubstringIndex` answers it without scanning the
corpus, from two inverted indexes kept up to date on add and remove:

* **word tokens** (maximal ``\\w+`` runs of the lowered text) -> the texts that
  hold them. A token of the needle with a non-word character on both sides
  inside the needle must be a whole token of any text holding the needle, so
  the rarest such token's texts are the only candidates;
* **3-grams of the token vocabulary** -> tokens. A needle with no interior
  token (``server42``, ``vdi-a``) has edge tokens that must end, start or sit
  inside a text token; the 3-grams find those tokens, whose texts are the
  candidates.

Every candidate is then verified with the plain ``needle in text``, so the
index can only narrow the search, never change the answer; a needle the index
cannot narrow (no word character, or only edge tokens shorter than 3) is
answered by scanning the live texts, as before. Why this structure rather than
a suffix automaton or an n-gram index over the texts: values the model copies
are identifiers and words, which tokens pin down to a handful of texts; token
postings cost about one entry per word (an n-gram index over the text costs
one per character), they support removal (a suffix automaton does not, and
evictions are the point), and the final scan keeps the semantics the
reference (``tests/grounding_reference.py``) defines, which a property test
holds the index to.

Tokenising is deferred until it pays: texts added wait, scanned by every query, until those
waiting hold more than :data:`SCAN_CHARS` characters, and are then tokenised together. A short
run (most runs: a few kilobytes of served text) never builds postings at all; a long one
tokenises each text once, as it would have, and a query scans at most that many characters.

Memory follows the live frame: an evicted message's postings are removed (at
the cost its indexing had), so the index holds what the host's own frame holds,
lowered, plus one posting per distinct word.
"""

from __future__ import annotations

import contextlib
import operator
import re
from collections.abc import Iterable
from typing import Any, Final

from ..checks.unsupported_argument import TextCorpus, joined_hold, joined_texts
from ..loop import RequestFrame, _as_tuple, content_text, tool_names_present

_WORD: Final = re.compile(r"\w+")
_GRAM: Final = 3
_NO_TEXTS: Final[frozenset[str]] = frozenset()


# Below this many characters of texts not yet tokenised, a query scans them instead: a short run
# (most runs) never pays for postings, and a long one tokenises each text once, as before, when
# its untokenised texts pass this. A scan of this much costs a query a few microseconds.
SCAN_CHARS: Final = 16_384


class SubstringIndex(TextCorpus):
    """A multiset of lowered texts answering ``any(needle in text)`` through token postings.

    Texts are tokenised in batches: one added waits, scanned by every query, until those waiting
    hold more than ``scan_chars`` characters; then all of them are tokenised. A text removed while
    it waits is never tokenised at all (a window that evicts early saves the whole cost).
    """

    __slots__ = (
        "_copies",
        "_grams",
        "_joined",
        "_pending",
        "_pending_chars",
        "_postings",
        "_scan_chars",
        "count",
    )

    def __init__(self, scan_chars: int = SCAN_CHARS) -> None:
        self._copies: dict[str, int] = {}
        self._postings: dict[str, set[str]] = {}
        self._grams: dict[str, set[str]] = {}
        # Distinct texts held but not yet in the postings (a dict for its order and O(1) removal).
        self._pending: dict[str, None] = {}
        self._pending_chars = 0
        # The waiting texts joined (``joined_texts``), made again on the first query after a
        # change: one C search instead of a Python loop over hundreds of texts.
        self._joined: str | None = None
        self._scan_chars = scan_chars
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def add(self, lowered: str) -> None:
        self.count += 1
        copies = self._copies.get(lowered)
        if copies:
            self._copies[lowered] = copies + 1
            return
        self._copies[lowered] = 1
        self._pending[lowered] = None
        self._pending_chars += len(lowered)
        self._joined = None
        if self._pending_chars > self._scan_chars:
            self._tokenise_pending()

    def _tokenise_pending(self) -> None:
        postings = self._postings
        for lowered in self._pending:
            for token in set(_WORD.findall(lowered)):
                holders = postings.get(token)
                if holders is None:
                    postings[token] = {lowered}
                    self._add_grams(token)
                else:
                    holders.add(lowered)
        self._pending.clear()
        self._pending_chars = 0
        self._joined = None

    def remove(self, lowered: str) -> None:
        copies = self._copies.get(lowered)
        if not copies:
            return
        self.count -= 1
        if copies > 1:
            self._copies[lowered] = copies - 1
            return
        del self._copies[lowered]
        if lowered in self._pending:
            del self._pending[lowered]
            self._pending_chars -= len(lowered)
            self._joined = None
            return
        postings = self._postings
        for token in set(_WORD.findall(lowered)):
            holders = postings.get(token)
            if holders is None:
                continue
            holders.discard(lowered)
            if not holders:
                del postings[token]
                self._drop_grams(token)

    def _waiting_hold(self, needle: str) -> bool:
        joined = self._joined
        if joined is None:
            joined = self._joined = joined_texts(self._pending)
        return joined_hold(needle, self._pending, joined)

    def _add_grams(self, token: str) -> None:
        grams = self._grams
        for start in range(len(token) - _GRAM + 1):
            gram = token[start : start + _GRAM]
            tokens = grams.get(gram)
            if tokens is None:
                grams[gram] = {token}
            else:
                tokens.add(token)

    def _drop_grams(self, token: str) -> None:
        grams = self._grams
        for start in range(len(token) - _GRAM + 1):
            gram = token[start : start + _GRAM]
            tokens = grams.get(gram)
            if tokens is not None:
                tokens.discard(token)
                if not tokens:
                    del grams[gram]

    # ── the query ──────────────────────────────────────────────────────
    def contains(self, needle: str) -> bool:
        """Whether ``needle`` (already lowered) is a substring of some text held."""
        if not self._copies:
            return False
        if self._pending and self._waiting_hold(needle):
            return True
        if len(self._pending) == len(self._copies):  # nothing tokenised: the scan was the answer
            return False
        # The postings hold exactly the texts not waiting, so the candidates are among those.
        candidates = self._candidates(needle)
        texts: Iterable[str] = self._copies if candidates is None else candidates
        return any(needle in text for text in texts)

    def _candidates(self, needle: str) -> Iterable[str] | None:
        """The only texts that can hold ``needle``; ``None`` when the index cannot narrow it."""
        words = list(_WORD.finditer(needle))
        if not words:
            return None
        end = len(needle)
        postings = self._postings
        best: set[str] | None = None
        for word in words:
            if word.start() > 0 and word.end() < end:  # a whole token of any text holding the needle
                holders = postings.get(word.group())
                if holders is None:
                    return _NO_TEXTS
                if best is None or len(holders) < len(best):
                    best = holders
        if best is not None:
            return best
        # Only edge tokens: the first ends a text token, the last starts one (one spanning the whole
        # needle sits anywhere inside one). The longest narrows best.
        word = max(words, key=lambda w: w.end() - w.start())
        edge = word.group()
        if len(edge) < _GRAM:
            return None
        grams = self._grams
        rarest: set[str] | None = None
        for start in range(len(edge) - _GRAM + 1):
            tokens = grams.get(edge[start : start + _GRAM])
            if tokens is None:
                return _NO_TEXTS
            if rarest is None or len(tokens) < len(rarest):
                rarest = tokens
        assert rarest is not None
        at_start, at_end = word.start() == 0, word.end() == end
        if at_start and not at_end:
            fits = [token for token in rarest if token.endswith(edge)]
        elif at_end and not at_start:
            fits = [token for token in rarest if token.startswith(edge)]
        else:
            fits = [token for token in rarest if edge in token]
        if len(fits) == 1:
            return postings[fits[0]]
        found: set[str] = set()
        for token in fits:
            found |= postings[token]
        return found


class _Seen:
    """One message of the mirrored frame: what the index took from it, and where it sits."""

    __slots__ = ("assistant", "call_id", "calls", "message", "seq", "text", "tool_name", "tool_role")

    def __init__(self, message: object, seq: int) -> None:
        self.message = message  # held, so its id() cannot be reused while it is mirrored
        self.seq = seq
        role = getattr(message, "role", None)
        self.assistant = role == "assistant"
        self.tool_role = role == "tool"
        text = content_text(getattr(message, "content", ""))
        self.text = text.lower() if text else ""
        # What this message names, as tool_names_present reads it.
        name = getattr(message, "tool_name", None) if self.tool_role else None
        self.tool_name: str | None = name if isinstance(name, str) and name else None
        call_id = (
            getattr(message, "tool_call_id", None) if self.tool_role and self.tool_name is None else None
        )
        self.call_id: str | None = call_id if isinstance(call_id, str) else None
        # The calls an assistant message asks for: call id -> tool name, the last one winning.
        self.calls: dict[str, str] = {}
        if self.assistant:
            for call in _as_tuple(getattr(message, "tool_calls", ())):
                asked = getattr(call, "call_id", None)
                called = getattr(call, "name", None)
                if isinstance(asked, str) and isinstance(called, str) and called:
                    self.calls[asked] = called


class FrameIndex:
    """The last frame the judge was shown, kept as an index that each new frame updates by its difference.

    ``grounded`` holds the lowered non-empty texts the request served (the system instructions
    and every non-assistant message), ``assistant`` the model's own; :meth:`present` is
    :func:`~context_integrity.loop.tool_names_present` of the frame. :meth:`take_fresh`
    hands the messages added since it was last called, for the producer memory.
    """

    def __init__(self, scan_chars: int = SCAN_CHARS) -> None:
        self.grounded = SubstringIndex(scan_chars)
        self.assistant = SubstringIndex(scan_chars)
        self._scan_chars = scan_chars
        self._frame: RequestFrame | None = None
        self._messages: tuple[Any, ...] = ()
        self._live: dict[int, _Seen] = {}
        self._system = ""
        self._seq = 0
        # Tool messages named in the frame, and the unnamed ones by the call id their asker gave.
        self._named: dict[str, int] = {}
        self._askers: dict[str, list[_Seen]] = {}
        self._orphans: dict[str, list[_Seen]] = {}
        self._resolved: dict[str, int] = {}
        self._resolved_by: dict[str, list[str]] = {}
        # A frame holding one message object twice: presence is then read from the frame itself.
        self._repeats = False
        self._fresh: list[_Seen] = []

    @property
    def frame(self) -> RequestFrame | None:
        return self._frame

    def present(self) -> frozenset[str]:
        """The names of the tools whose results are in the frame last synced."""
        if self._repeats and self._frame is not None:
            return tool_names_present(self._frame)
        return frozenset(self._named.keys() | self._resolved.keys())

    def take_fresh(self) -> list[_Seen]:
        """The messages added since the last call that are still in the frame, oldest first."""
        fresh, self._fresh = self._fresh, []
        return [seen for seen in fresh if self._live.get(id(seen.message)) is seen]

    def asker_of(self, call_id: object) -> str | None:
        """The tool the frame's last call with ``call_id`` names, from any message that asks for it."""
        if not isinstance(call_id, str):
            return None
        askers = self._askers.get(call_id)
        if not askers:
            return None
        return max(askers, key=_by_seq).calls[call_id]

    # ── following the frames ───────────────────────────────────────────
    def sync(self, frame: RequestFrame) -> None:
        """Make the index mirror ``frame``. Costs what changed since the last frame. Never half-done."""
        if frame is self._frame:
            return
        try:
            self._sync(frame)
        except Exception:
            # A hostile message, or a bug of ours: start over from this frame alone, so the index
            # never answers for a frame it only half read. If that fails too, the caller records it.
            self._reset()
            try:
                self._sync(frame)
            except Exception:
                self._reset()
                raise

    def _reset(self) -> None:
        self.__init__(self._scan_chars)  # type: ignore[misc]

    def _sync(self, frame: RequestFrame) -> None:
        system = frame.system.lower() if isinstance(frame.system, str) and frame.system else ""
        if system != self._system:
            if self._system:
                self.grounded.remove(self._system)
            if system:
                self.grounded.add(system)
            self._system = system
        messages = _as_tuple(frame.messages)
        previous = self._messages
        changed: set[str] = set()
        kept = _kept_prefix(messages, previous)
        if self._repeats:
            self._rebuild(messages, changed)
        elif kept is not None:
            # The frame only grew (the common case), or lost a short tail before growing.
            for message in previous[kept:]:
                self._remove(self._live[id(message)], changed)
            added = messages[kept:]
            if any(id(message) in self._live for message in added) or len(set(map(id, added))) != len(added):
                self._rebuild(messages, changed)
            else:
                for message in added:
                    self._add(message, changed)
        else:
            current = set(map(id, messages))
            if len(current) != len(messages):
                self._rebuild(messages, changed)
            else:
                for gone in self._live.keys() - current:
                    self._remove(self._live[gone], changed)
                new = current - self._live.keys()
                tail = messages[len(messages) - len(new) :] if new else ()
                if set(map(id, tail)) == new:
                    for message in tail:
                        self._add(message, changed)
                else:  # something arrived in the middle: renumber the frame in order
                    self._renumber(messages, changed)
        for call_id in changed:
            self._resolve(call_id)
        self._messages = messages
        self._frame = frame
        if len(self._fresh) > 2 * len(self._live) + 64:  # nobody takes them (no compose seam): keep the live
            self._fresh = [seen for seen in self._fresh if self._live.get(id(seen.message)) is seen]

    def _rebuild(self, messages: tuple[Any, ...], changed: set[str]) -> None:
        """Mirror ``messages`` from nothing: the path for a frame that repeats one message object.

        Such a frame's texts count once per position, as the reference counts them, and its
        presence is read from the frame itself while repeats last (rare enough to pay a scan).
        """
        system, fresh = self._system, self._fresh
        self._reset()
        self._system, self._fresh = system, fresh
        if system:
            self.grounded.add(system)
        self._repeats = len(set(map(id, messages))) != len(messages)
        for message in messages:
            seen = self._live.get(id(message))
            if seen is None:
                self._add(message, changed)
            elif seen.text:
                (self.assistant if seen.assistant else self.grounded).add(seen.text)

    def _renumber(self, messages: tuple[Any, ...], changed: set[str]) -> None:
        for message in messages:
            seen = self._live.get(id(message))
            if seen is None:
                self._add(message, changed)
            else:
                self._seq += 1
                seen.seq = self._seq
                changed.update(seen.calls)
                if seen.call_id is not None:
                    changed.add(seen.call_id)

    def _add(self, message: object, changed: set[str]) -> None:
        self._seq += 1
        seen = _Seen(message, self._seq)
        self._live[id(message)] = seen
        self._fresh.append(seen)
        if seen.text:
            (self.assistant if seen.assistant else self.grounded).add(seen.text)
        if seen.tool_name is not None:
            self._named[seen.tool_name] = self._named.get(seen.tool_name, 0) + 1
        elif seen.call_id is not None:
            self._orphans.setdefault(seen.call_id, []).append(seen)
            changed.add(seen.call_id)
        for call_id in seen.calls:
            self._askers.setdefault(call_id, []).append(seen)
            changed.add(call_id)

    def _remove(self, seen: _Seen, changed: set[str]) -> None:
        del self._live[id(seen.message)]
        if seen.text:
            (self.assistant if seen.assistant else self.grounded).remove(seen.text)
        if seen.tool_name is not None:
            _decrement(self._named, seen.tool_name)
        elif seen.call_id is not None:
            _discard(self._orphans, seen.call_id, seen)
            changed.add(seen.call_id)
        for call_id in seen.calls:
            _discard(self._askers, call_id, seen)
            changed.add(call_id)

    def _resolve(self, call_id: str) -> None:
        """Name the unnamed tool messages of one call id by the last asker before each of them."""
        for name in self._resolved_by.pop(call_id, ()):
            _decrement(self._resolved, name)
        orphans = self._orphans.get(call_id)
        askers = self._askers.get(call_id)
        if not orphans or not askers:
            return
        names: list[str] = []
        for orphan in orphans:
            before = [asker for asker in askers if asker.seq < orphan.seq]
            if before:
                names.append(max(before, key=_by_seq).calls[call_id])
        for name in names:
            self._resolved[name] = self._resolved.get(name, 0) + 1
        if names:
            self._resolved_by[call_id] = names


# How many of the previous frame's last messages may have been dropped for the identity-prefix path
# (a host replacing a transient last message); past that, the set-difference path.
_TAIL_DROPS: Final = 2


def _kept_prefix(messages: tuple[Any, ...], previous: tuple[Any, ...]) -> int | None:
    """How long a prefix of ``previous`` starts ``messages``, object for object, when all but at most
    :data:`_TAIL_DROPS` of ``previous`` does; else ``None``. One C-level identity pass."""
    known = len(previous)
    for dropped in range(min(_TAIL_DROPS, known) + 1):
        kept = known - dropped
        if kept > len(messages):
            continue
        if kept == 0 or (
            messages[kept - 1] is previous[kept - 1] and all(map(operator.is_, messages[:kept], previous))
        ):
            return kept
    return None


def _by_seq(seen: _Seen) -> int:
    return seen.seq


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


def _discard(groups: dict[str, list[_Seen]], key: str, seen: _Seen) -> None:
    group = groups.get(key)
    if group is not None:
        with contextlib.suppress(ValueError):
            group.remove(seen)
        if not group:
            del groups[key]
