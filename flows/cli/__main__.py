"""``python -m flows.cli`` is the ``bottlenecks`` command."""

from flows.cli import main

main()
