"""The collector pause around parsing and compiling: the collector's state always comes back."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy.language.gc_pause import collector_paused
from policy.language.loader import check_policy
from policy.language.parser import parse


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_restored_after_nested_pauses(collector_enabled: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_when_the_block_raises(collector_enabled: None) -> None:
    with pytest.raises(ValueError), collector_paused():
        raise ValueError
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        parse("gate {\n", "t")
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("text", ["tool w { writes path=p content=c }\n", "gate {\n", 'x "\\q"\n',
                                  "a {\n" * 40 + "}\n" * 40])
def test_on_after_parsing_and_checking_anything(text: str, tmp_path: Path, collector_enabled: None) -> None:
    parse(text, "t")
    assert gc.isenabled()
    path = tmp_path / "t.policy"
    path.write_text(text)
    check_policy(path)
    assert gc.isenabled()


def test_on_after_concurrent_holders(collector_enabled: None) -> None:
    start = threading.Barrier(8)

    def hold() -> None:
        start.wait()
        for _ in range(200):
            with collector_paused():
                pass

    threads = [threading.Thread(target=hold) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled()
