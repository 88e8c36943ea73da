"""Run ntrace commands in this process under an address-space limit, for tests/test_hostile_corpus.py: reads a JSON job on stdin, writes one JSON result line per run.

The job: {"limit": bytes of RLIMIT_AS, "runs": [[arg, ...], ...]}. Each result: args, exit code,
stdout (its end), stderr, and the repr of any exception that escaped the CLI (a crash). The
limit is set before ntrace is imported, so every allocation of the runs counts against it.
"""

from __future__ import annotations

import json
import resource
import sys


def main() -> None:
    job = json.loads(sys.stdin.read())
    resource.setrlimit(resource.RLIMIT_AS, (job["limit"], job["limit"]))
    from click.testing import CliRunner

    from ntrace.cli import main as cli

    for args in job["runs"]:
        result = CliRunner().invoke(cli, args)
        crash = None
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            crash = repr(result.exception)
        print(json.dumps({"args": args, "exit": result.exit_code, "stdout": result.stdout[-200_000:], "stderr": result.stderr, "crash": crash}, ensure_ascii=True), flush=True)


if __name__ == "__main__":
    main()
