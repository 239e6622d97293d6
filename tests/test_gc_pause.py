"""Reading a policy leaves the garbage collector as it was: no process-wide switch from library code
(full collections are deferred only while a check runs)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from policy.language.gc_pauses import DEFERRED_THRESHOLD, fewer_full_collections
from policy.language.loader import check_policy
from policy.language.parser import parse


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.parametrize("text", ["tool w { writes path=p content=c }\n", "gate {\n", 'x "\\q"\n',
                                  "a {\n" * 40 + "}\n" * 40])
def test_on_after_parsing_and_checking_anything(text: str, tmp_path: Path, collector_enabled: None) -> None:
    parse(text, "t")
    assert gc.isenabled()
    path = tmp_path / "t.policy"
    path.write_text(text)
    check_policy(path)
    assert gc.isenabled()


def test_full_collections_are_deferred_during_a_check_and_the_thresholds_put_back(tmp_path: Path) -> None:
    path = tmp_path / "t.policy"
    path.write_text("tool w { writes path=p content=c }\n")
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    with fewer_full_collections():
        seen.append(gc.get_threshold())
        check_policy(path)  # nested: the outer deferral stays
        seen.append(gc.get_threshold())
    assert seen == [(before[0], before[1], max(before[2], DEFERRED_THRESHOLD))] * 2
    assert gc.get_threshold() == before
    check_policy(path)
    assert gc.get_threshold() == before


def test_thresholds_set_by_the_application_during_a_check_are_kept() -> None:
    before = gc.get_threshold()
    try:
        with fewer_full_collections():
            gc.set_threshold(500, 5, 5)
        assert gc.get_threshold() == (500, 5, 5)
    finally:
        gc.set_threshold(*before)


def test_concurrent_checks_put_the_thresholds_back_once_the_last_ends(tmp_path: Path) -> None:
    path = tmp_path / "t.policy"
    path.write_text("".join(f"tool w{index} {{ writes path=p content=c }}\n" for index in range(200)))
    before = gc.get_threshold()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: check_policy(path).ok, range(16)))
    assert results == [True] * 16
    assert gc.get_threshold() == before
