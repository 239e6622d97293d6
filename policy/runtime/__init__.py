"""Evaluation: a ``CompiledPolicy`` and the harness's events → ``Decision``s.

``guard`` is the entry point; ``gates`` check writes before they run,
``output`` reads a tool's output once, ``signatures`` name its failure,
``loops`` count repeated calls, results and oscillation per scope.
"""
