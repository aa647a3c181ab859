"""`python -m translator`: the same command line as `translator`."""

from translator.cli import main

main()
