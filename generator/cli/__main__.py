"""``python -m generator.cli``: the same as the ``perfsite`` command."""

from generator.cli.app import main

main()
