"""The file a write or edit call would leave: writes, appends, splices, malformed arguments."""

from __future__ import annotations

from typing import Any

import pytest

from policy.model.compiled import ToolSpec
from policy.runtime.gates import FileEffect, file_effect

WRITE = ToolSpec("write_file", "write", {"path": "path", "content": "content", "append": "append"})
EDIT = ToolSpec("str_replace", "edit",
                {"path": "path", "old": "old_str", "new": "new_str", "all": "replace_all"})
MULTI = ToolSpec(
    "MultiEdit", "multiedit",
    {"path": "file_path", "edits": "edits", "old": "old_string", "new": "new_string", "all": "replace_all"},
)


class Files:
    """An in-memory sandbox that records which paths were read."""

    def __init__(self, **files: str | bytes) -> None:
        self.files = files
        self.reads: list[str] = []

    def __call__(self, path: str) -> Any:
        self.reads.append(path)
        return self.files.get(path)


def effect(spec: ToolSpec, files: Files, **args: Any) -> FileEffect | None:
    return file_effect(spec, args, files)


def test_overwrite_replaces_the_content_and_keeps_the_old_text() -> None:
    result = effect(WRITE, Files(**{"a.py": "old\n"}), path="a.py", content="new\n")
    assert result == FileEffect("a.py", "old\n", "new\n")
    assert result.changes_file


def test_append_adds_to_the_current_text() -> None:
    result = effect(WRITE, Files(**{"a.py": "x = 1\n"}), path="a.py", content="y = 2\n", append=True)
    assert result is not None and result.after == "x = 1\ny = 2\n"


def test_append_to_a_missing_file_starts_from_empty_text() -> None:
    result = effect(WRITE, Files(), path="new.py", content="x = 1\n", append=True)
    assert result == FileEffect("new.py", None, "x = 1\n")


def test_writing_the_same_content_changes_nothing() -> None:
    result = effect(WRITE, Files(**{"a.py": "same\n"}), path="a.py", content="same\n")
    assert result is not None and not result.changes_file


@pytest.mark.parametrize(("flag", "appends"), [("true", True), ("True", True), (" false ", False), (1, True),
                                                (0, False), (None, False), ("yes", True), ("no", False)])
def test_boolean_flags_sent_as_strings_or_numbers_are_understood(flag: Any, appends: bool) -> None:
    result = effect(WRITE, Files(**{"a.txt": "A"}), path="a.txt", content="B", append=flag)
    assert result is not None and result.after == ("AB" if appends else "B")


@pytest.mark.parametrize("args", [
    {"content": "x"},                                    # no path
    {"path": "", "content": "x"},                        # empty path
    {"path": ["a.py"], "content": "x"},                  # path is not a string
    {"path": "a.py"},                                    # no content
    {"path": "a.py", "content": {"x": 1}},               # content is not a string
    {"path": "a.py", "content": "x", "append": "maybe"},  # a flag nobody can read
    {"path": "a.py", "content": "x", "append": [True]},
])
def test_a_write_that_cannot_be_understood_has_no_effect(args: dict[str, Any]) -> None:
    assert file_effect(WRITE, args, Files(**{"a.py": "old"})) is None


def test_an_edit_replaces_the_first_occurrence_only() -> None:
    result = effect(EDIT, Files(**{"a.py": "x = 1\nx = 1\n"}), path="a.py", old_str="x = 1", new_str="x = 2")
    assert result is not None and result.after == "x = 2\nx = 1\n"


def test_replace_all_replaces_every_occurrence() -> None:
    files = Files(**{"a.py": "x = 1\nx = 1\n"})
    result = effect(EDIT, files, path="a.py", old_str="x = 1", new_str="x = 2", replace_all="true")
    assert result is not None and result.after == "x = 2\nx = 2\n"


def test_lf_old_and_new_are_matched_to_a_crlf_file() -> None:
    files = Files(**{"a.py": "def f():\r\n    return 1\r\n"})
    old, new = "def f():\n    return 1", "def f():\n    return 2"
    result = effect(EDIT, files, path="a.py", old_str=old, new_str=new)
    assert result is not None and result.after == "def f():\r\n    return 2\r\n"


def test_crlf_old_and_new_are_matched_to_an_lf_file() -> None:
    files = Files(**{"a.py": "a\nb\nc\n"})
    result = effect(EDIT, files, path="a.py", old_str="a\r\nb", new_str="x\r\ny")
    assert result is not None and result.after == "x\ny\nc\n"


def test_an_old_text_with_the_files_own_mixed_endings_is_spliced_as_sent() -> None:
    text = "a\r\nb\r\nc\nd\r\n"  # mostly CRLF, one LF line
    result = effect(EDIT, Files(**{"a.py": text}), path="a.py", old_str="c\nd", new_str="C\nD")
    assert result is not None and result.after == "a\r\nb\r\nC\nD\r\n"


@pytest.mark.parametrize("args", [
    {"path": "a.py", "old_str": "absent", "new_str": "x"},  # old text not in the file
    {"path": "missing.py", "old_str": "x", "new_str": "y"},  # file missing
    {"path": "a.py", "old_str": "", "new_str": "y"},         # empty old text on a file with content
    {"path": "a.py", "old_str": "x"},                        # no new text
    {"path": "a.py", "old_str": 1, "new_str": "y"},          # old is not a string
    {"path": "a.py", "old_str": "x", "new_str": "y", "replace_all": "sometimes"},
])
def test_an_edit_that_cannot_apply_is_left_to_the_tool(args: dict[str, Any]) -> None:
    assert file_effect(EDIT, args, Files(**{"a.py": "x = 1\n"})) is None


@pytest.mark.parametrize("files", [Files(), Files(**{"new.py": ""})])
def test_an_edit_with_an_empty_old_text_creates_a_missing_or_empty_file(files: Files) -> None:
    result = effect(EDIT, files, path="new.py", old_str="", new_str="def f(:\n")
    assert result == FileEffect("new.py", files.files.get("new.py"), "def f(:\n")
    assert result.changes_file


def test_a_multi_edit_can_create_a_file_with_its_first_edit_and_go_on_editing_it() -> None:
    edits = [{"old_string": "", "new_string": "a = 1\n"}, {"old_string": "1", "new_string": "2"}]
    result = effect(MULTI, Files(), file_path="new.py", edits=edits)
    assert result == FileEffect("new.py", None, "a = 2\n")


def test_only_the_first_edit_of_a_multi_edit_can_create_the_file() -> None:
    edits = [{"old_string": "a", "new_string": "b"}, {"old_string": "", "new_string": "c"}]
    assert effect(MULTI, Files(**{"f.txt": "a"}), file_path="f.txt", edits=edits) is None


def test_a_multi_edit_applies_its_edits_in_order() -> None:
    edits = [{"old_string": "a", "new_string": "b"},
             {"old_string": "b", "new_string": "c", "replace_all": True}]
    result = effect(MULTI, Files(**{"f.txt": "ab b"}), file_path="f.txt", edits=edits)
    assert result is not None and result.after == "cc c"


def test_a_multi_edit_sent_as_a_json_string_is_understood() -> None:
    edits = '[{"old_string": "a", "new_string": "z"}]'
    result = effect(MULTI, Files(**{"f.txt": "ab"}), file_path="f.txt", edits=edits)
    assert result is not None and result.after == "zb"


@pytest.mark.parametrize("edits", [
    [{"old_string": "a", "new_string": "b"}, {"old_string": "absent", "new_string": "c"}],
    [{"old_string": "a", "new_string": "b"}, "not an edit"],
    [],
    "not json",
    {"old_string": "a", "new_string": "b"},
])
def test_a_multi_edit_with_any_unusable_edit_has_no_effect(edits: Any) -> None:
    assert effect(MULTI, Files(**{"f.txt": "ab"}), file_path="f.txt", edits=edits) is None


def test_bytes_from_read_file_are_decoded() -> None:
    result = effect(WRITE, Files(**{"a.py": "é\n".encode()}), path="a.py", content="x", append=True)
    assert result is not None and result.after == "é\nx"


def test_tools_without_a_writing_role_have_no_effect() -> None:
    files = Files(**{"a.py": "x"})
    assert file_effect(ToolSpec("bash", "run", {"command": "command"}), {"command": "ls"}, files) is None
    assert file_effect(ToolSpec("read_file", "read", {"path": "path"}), {"path": "a.py"}, files) is None
    assert files.reads == []
