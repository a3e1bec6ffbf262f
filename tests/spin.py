"""Run a command beside two processes spinning on the CPU, as on a shared machine:
``python tests/spin.py COMMAND...`` (``make test-loaded``). Exits with the command's code;
the spinners are ended by their own pids whatever happens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.spinners import spinning


def main(command: list[str]) -> int:
    if not command:
        print("usage: python tests/spin.py COMMAND...", file=sys.stderr)
        return 2
    with spinning(2) as pids:
        print(f"spin.py: two spinners beside the command (pids {pids})", file=sys.stderr)
        return subprocess.call(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
