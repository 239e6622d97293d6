"""Scripted LangChain chat models for the hook tests: ``recording`` adds a record of every request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr

M = TypeVar("M", bound=FakeMessagesListChatModel)


def recording(base: type[M]) -> type[M]:
    """``base`` (a scripted model) that binds tools to itself and records, in ``requests``, the
    messages of every request it is sent."""

    class Recording(base):  # type: ignore[valid-type,misc]
        _requests: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

        @property
        def requests(self) -> list[list[BaseMessage]]:
            return self._requests

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Recording:
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            self._requests.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    Recording.__name__ = Recording.__qualname__ = f"Recording{base.__name__}"
    return Recording
