"""How the `nodeflow` entry point runs a command that may have opened a Temporal client."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable


def exiting_after(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The command as the `nodeflow` entry point runs it: the process ends right after it, skipping
    interpreter finalization, during which the Temporal client's native threads can abort the process
    (temporalio/sdk-python#300) and turn a successful command into a crash. Output is flushed first."""

    def run_and_exit(args: argparse.Namespace) -> int:
        code = command(args)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    return run_and_exit
