"""Reading a policy leaves the garbage collector as it was: no process-wide switch from library code."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

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
