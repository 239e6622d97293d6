"""Write gates: the file a write or edit would leave, checked before the call runs."""

from policy.runtime.gates.bounds import TooLarge, read_local_file
from policy.runtime.gates.effects import FileEffect, UnreadEffect, bounded_effect, file_effect, unread_effect
from policy.runtime.gates.gate import check_effect, check_write, gate_applies, matching_gate

__all__ = ["FileEffect", "TooLarge", "UnreadEffect", "bounded_effect", "check_effect", "check_write",
           "file_effect", "gate_applies", "matching_gate", "read_local_file", "unread_effect"]
