"""``python -m cli``: the same as the ``policyctl`` script."""

from cli.main import main

main()
