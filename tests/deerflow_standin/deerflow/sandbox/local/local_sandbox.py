"""Mirrors ``sandbox/local/local_sandbox.py``: how the local sandbox reports a command's output.

stdout, then ``\\nStd Error:\\n`` and stderr (stderr alone when there is no stdout), then
``\\nExit Code: N`` when the command failed; ``(no output)`` when there is nothing.  DeerFlow's
``bash`` tool returns this text as a successful ToolMessage.
"""

from __future__ import annotations

import subprocess


def execute_command(command: str, cwd: str | None = None, timeout: float = 60) -> str:
    done = subprocess.run(["/bin/bash", "-c", command], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)
    output = done.stdout
    if done.stderr:
        output += f"\nStd Error:\n{done.stderr}" if output else done.stderr
    if done.returncode != 0:
        output += f"\nExit Code: {done.returncode}"
    return output if output else "(no output)"
