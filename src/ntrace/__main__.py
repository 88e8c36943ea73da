"""`python -m ntrace` runs the CLI."""

from ntrace.cli import main

main()
