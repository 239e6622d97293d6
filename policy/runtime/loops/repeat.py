"""``loop repeat``: the same batch of calls again and again (DeerFlow's hash layer).

A batch's key is counted within the last ``window`` turns: a warning at
``warn`` (once per key while it still counts in the window), a stop at
``stop``.  With ``until_progress`` an occurrence counts only while the
batch's results stay the same and no state-changing call succeeded since:
a different result restarts that batch's count, a state change restarts
every count.  Occurrences that no longer count are tombstoned in place, so
the window still slides by turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from policy.model.compiled import CompiledPolicy, RepeatRule
from policy.model.decision import Action
from policy.model.events import ToolCall
from policy.model.fingerprint import fingerprint
from policy.runtime.loops.finding import Finding, excerpt
from policy.runtime.loops.keys import batch_key
from policy.runtime.loops.layer import DIGEST, Fields, Layer, Observed, checked_int

EXCERPTS = 3
"""Result excerpts kept per scope, for the most recently completed distinct batches that would
warn if made once more (only their hints show an excerpt)."""
TOMBSTONE = bytes(DIGEST)
"""A repeat entry that no longer counts (progress was made since)."""

_MASK = (1 << (8 * DIGEST)) - 1


@dataclass(slots=True)
class RepeatState:
    """What ``loop repeat`` remembers of one scope."""

    keys: bytes = b""
    """Batch fingerprints of the last ``window`` turns, oldest first; TOMBSTONE: no longer counts."""
    results: bytes = b""
    """Per turn, the fingerprint of its results once all arrived (TOMBSTONE until then)."""
    turns: int = 0
    """Turns seen in this scope; the newest entry is turn number ``turns``."""
    warned: list[bytes] = field(default_factory=list)
    """Batch fingerprints warned about; a mark lasts while the batch still counts in the window."""
    inflight: dict[str, int] = field(default_factory=dict)
    """Call id → its turn number, until the call's result arrives."""
    partial: dict[int, int] = field(default_factory=dict)
    """Turn number → its calls' results combined so far (turns of several calls)."""
    excerpt_keys: bytes = b""
    """The batches of the last few completed results that would warn if made once more, newest
    first (``EXCERPTS`` at most)."""
    excerpts: list[str] = field(default_factory=list)
    """Their results, shortened."""

    def to_json(self) -> dict[str, Any]:
        return {
            "keys": self.keys.hex(),
            "results": self.results.hex(),
            "turns": self.turns,
            "warned": [key.hex() for key in self.warned],
            "inflight": self.inflight,
            "partial": [[turn, value] for turn, value in self.partial.items()],
            "excerpt_keys": self.excerpt_keys.hex(),
            "excerpts": self.excerpts,
        }

    @classmethod
    def from_json(cls, fields: Fields) -> RepeatState:
        state = cls(
            keys=fields.digests("keys"),
            results=fields.digests("results"),
            turns=fields.get("turns", int),
            warned=fields.digest_list("warned"),
            inflight={str(k): checked_int(v, fields.name("inflight"))
                      for k, v in fields.get("inflight", dict).items()},
            partial=_turn_values(fields.get("partial", list), fields.name("partial")),
            excerpt_keys=fields.digests("excerpt_keys"),
            excerpts=fields.strings("excerpts"),
        )
        if len(state.keys) != len(state.results) or len(state.excerpt_keys) != len(state.excerpts) * DIGEST:
            raise ValueError("scope state: parallel histories differ in length")
        return state


def _turn_values(items: list[Any], path: str) -> dict[int, int]:
    values: dict[int, int] = {}
    for item in items:
        if not isinstance(item, list) or len(item) != 2:
            raise ValueError(f"scope state: {path} must hold [turn, value] pairs")
        values[checked_int(item[0], path)] = checked_int(item[1], path)
    return values


class RepeatLayer(Layer[RepeatState]):
    kind = "repeat"
    state_name = "repeat"
    state_type = RepeatState

    def __init__(self, rule: RepeatRule) -> None:
        self.rule = rule
        self._width = rule.window * DIGEST

    @classmethod
    def from_policy(cls, policy: CompiledPolicy) -> RepeatLayer | None:
        rule = policy.loop(RepeatRule)
        return cls(rule) if rule else None

    def on_turn(
        self, state: RepeatState, calls: Sequence[ToolCall], call_keys: Sequence[str]
    ) -> Finding | None:
        """Count the batch (its calls and their keys); a stop, an unmarked warning candidate, or None."""
        key = fingerprint(call_keys[0] if len(call_keys) == 1 else batch_key(call_keys))
        state.turns += 1
        keys = state.keys + key
        results = state.results + TOMBSTONE
        overflow = len(keys) - self._width
        evicted = b""
        if overflow > 0:
            evicted, keys, results = keys[:overflow], keys[overflow:], results[overflow:]
        state.keys, state.results = keys, results
        # Every mark has an entry in the window (``_forget_absent``), so only a marked batch's
        # entry leaving it can end a mark: one entry leaves per turn (more after a window shrank).
        if evicted and state.warned and (overflow > DIGEST or evicted in state.warned):
            _forget_absent(state)
        inflight = state.inflight
        for call in calls:
            inflight[call.id] = state.turns
        if overflow > 0 and len(inflight) > len(calls):
            _drop_stale(state)

        count = keys.count(key)
        rule = self.rule
        if count >= rule.stop:
            return self._finding("stop", state, key, calls, count)
        if count >= rule.warn and key not in state.warned:
            finding = self._finding("warn", state, key, calls, count)
            finding.mark = partial(state.warned.append, key)
            return finding
        return None

    def on_result(self, state: RepeatState, observed: Observed) -> None:
        """Record a call's result; with ``until_progress``, restart counts on progress.  Never a finding."""
        turn = state.inflight.pop(observed.call.id, None)
        if turn is not None:
            self._record(state, turn, observed.call_key, observed.result_key, observed.text)
        if observed.state_changed and self.rule.until_progress:
            _tombstone_through(state, turn if turn is not None else state.turns)

    def _record(self, state: RepeatState, turn: int, call_key: bytes, result: bytes, text: str) -> None:
        position = turn - (state.turns - len(state.keys) // DIGEST) - 1
        combined = state.partial.pop(turn, 0) + int.from_bytes(result, "big") * (
            2 * int.from_bytes(call_key, "big") + 1
        )
        if position < 0:
            return
        if turn in state.inflight.values():  # other calls of that turn are still running
            state.partial[turn] = combined & _MASK
            return
        digest = (combined & _MASK).to_bytes(DIGEST, "big")
        if digest == TOMBSTONE:
            digest = (1).to_bytes(DIGEST, "big")
        start = position * DIGEST
        key = state.keys[start : start + DIGEST]
        state.results = state.results[:start] + digest + state.results[start + DIGEST :]
        if key == TOMBSTONE:  # progress was made since: this occurrence no longer counts
            return
        if self.rule.until_progress:
            previous = _previous_result(state, key, start)
            if previous is not None and previous != digest:
                _restart(state, key, start)
        if state.keys.count(key) + 1 >= self.rule.warn:  # made once more, the batch would warn
            _keep_excerpt(state, key, text)

    def _finding(
        self, action: Action, state: RepeatState, key: bytes, calls: Sequence[ToolCall], count: int
    ) -> Finding:
        """The finding for the batch ``key``, with the facts its hint shows: its count and limits,
        whether its known results in the window, at least two, all came out the same, and the
        excerpt kept of its last result.  Both are looked up here, not in helpers: this runs on
        every warning and stop, where each Python call counts (``bench/bench_deerflow.py``)."""
        find, results = state.keys.find, state.results
        first, known, same = None, 0, True
        offset = find(key)
        while offset >= 0:  # the entries equal to ``key`` (``_aligned``, in one pass)
            if offset % DIGEST:  # straddles two entries
                offset = find(key, offset + 1)
                continue
            result = results[offset : offset + DIGEST]
            if result != TOMBSTONE:
                if first is None:
                    first = result
                elif result != first:
                    same = False
                    break
                known += 1
            offset = find(key, offset + DIGEST)
        find = state.excerpt_keys.find  # the excerpt's entry: at most one, keys are distinct
        offset = find(key)
        while offset % DIGEST and offset >= 0:  # straddles two entries
            offset = find(key, offset + 1)
        rule = self.rule
        facts: dict[str, Any] = {
            "count": count,
            "warn": rule.warn,
            "stop": rule.stop,
            "window": rule.window,
            "same_result": same and known >= 2,
            "result_excerpt": state.excerpts[offset // DIGEST] if offset >= 0 else "",
            "until_progress": rule.until_progress,
            "batch_size": len(calls),
        }
        return Finding("repeat", action, rule.ref, rule.hint, calls[0], facts, _describe)


def _describe(finding: Finding) -> str:
    facts = finding.facts
    same = ", with the same result each time" if facts["same_result"] else ""
    return (
        f"{finding.call_text(80)} was made {facts['count']} times within the last "
        f"{facts['window']} turns{same} (warn at {facts['warn']}, stop at {facts['stop']})"
    )


def _keep_excerpt(state: RepeatState, key: bytes, text: str) -> None:
    """Remember the result of ``key`` for its hint, among the few most recent batches."""
    keys, excerpts = state.excerpt_keys, state.excerpts
    for offset in _aligned(keys, key, len(keys)):  # at most one: keys are distinct
        keys = keys[:offset] + keys[offset + DIGEST :]
        excerpts = excerpts[: offset // DIGEST] + excerpts[offset // DIGEST + 1 :]
    state.excerpt_keys = (key + keys)[: EXCERPTS * DIGEST]
    state.excerpts = [excerpt(text), *excerpts][:EXCERPTS]


def _aligned(keys: bytes, key: bytes, end: int) -> list[int]:
    """Byte offsets of the entries equal to ``key`` before ``end``."""
    offsets = []
    offset = keys.find(key, 0, end)
    while offset >= 0:
        if offset % DIGEST:  # straddles two entries
            offset = keys.find(key, offset + 1, end)
        else:
            offsets.append(offset)
            offset = keys.find(key, offset + DIGEST, end)
    return offsets


def _previous_result(state: RepeatState, key: bytes, end: int) -> bytes | None:
    """The newest known result of ``key`` among the entries before byte offset ``end``."""
    for offset in reversed(_aligned(state.keys, key, end)):
        result = state.results[offset : offset + DIGEST]
        if result != TOMBSTONE:
            return result
    return None


def _restart(state: RepeatState, key: bytes, end: int) -> None:
    """A different result: earlier occurrences of ``key`` no longer count, nor does its warning."""
    keys = bytearray(state.keys)
    for offset in _aligned(state.keys, key, end):
        keys[offset : offset + DIGEST] = TOMBSTONE
    state.keys = bytes(keys)
    if key in state.warned:
        state.warned.remove(key)


def _tombstone_through(state: RepeatState, turn: int) -> None:
    """A state change: no occurrence up to ``turn`` counts any more."""
    entries = turn - (state.turns - len(state.keys) // DIGEST)
    if entries <= 0:
        return
    cut = min(entries, len(state.keys) // DIGEST) * DIGEST
    state.keys = TOMBSTONE * (cut // DIGEST) + state.keys[cut:]
    if state.warned:
        _forget_absent(state)


def _forget_absent(state: RepeatState) -> None:
    """A warning mark lasts while its batch still counts in the window (as an entry, not as bytes
    straddling two)."""
    find = state.keys.find
    kept: list[bytes] = []
    for key in state.warned:  # a loop, not a comprehension: no frame of its own
        offset = find(key)
        while offset % DIGEST and offset >= 0:
            offset = find(key, offset + 1)
        if offset >= 0:
            kept.append(key)
    state.warned = kept


def _drop_stale(state: RepeatState) -> None:
    """Forget calls whose results never came once their turn has left the window."""
    oldest = state.turns - len(state.keys) // DIGEST
    inflight = state.inflight
    while inflight:
        call_id = next(iter(inflight))
        turn = inflight[call_id]
        if turn > oldest:
            break
        del inflight[call_id]
        state.partial.pop(turn, None)
