"""A syrupy extension that stores each snapshot as one readable Markdown file.

``__snapshots__/<test file>/<test name>.md`` holds the text exactly, so a
hint change shows up in review as a plain diff of the hint.  Needs syrupy
(``pip install syrupy``); only test code imports this module.
"""

from __future__ import annotations

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode


class MarkdownSnapshotExtension(SingleFileSnapshotExtension):
    """Snapshots of ``str`` values, written as UTF-8 ``.md`` files."""

    file_extension = "md"
    _write_mode = WriteMode.TEXT
