"""Replaying recorded agent sessions through a policy.

``trace`` reads the JSON Lines format, ``harness`` is the simulated harness
(a virtual file system that allowed writes change), ``replayer`` runs a trace
and summarises its decisions for ``policyctl replay``.
"""
