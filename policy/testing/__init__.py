"""Testing policies: run their ``test`` blocks, report the results, snapshot their hints.

``runner`` runs a test through a :class:`policy.replay.harness.Session`; ``results``
renders results for ``policyctl test``; ``transcript`` renders the hints a
test produced as Markdown; ``snapshot`` is a syrupy extension writing one
``.md`` file per snapshot; ``plugin`` is the pytest plugin (entry point
``pytest11: policyctl``).  Nothing is imported here, so loading the pytest
plugin stays cheap.
"""
