"""`python -m ntrace` runs the CLI."""

from ntrace.cli import run

if __name__ == "__main__":  # spawned worker processes (analyze --jobs) import this module again: they must not rerun the CLI
    run()
