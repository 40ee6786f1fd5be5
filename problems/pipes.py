"""Command-line entry points whose output is piped into ``head`` end quietly when the reader goes away."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run_piped(main: Callable[[], int]) -> int:
    """``main()``, but a closed stdout (``| head``) ends it with status 0 instead of a BrokenPipeError traceback
    (the reader took what it wanted). Python's documented recipe: flush, and on EPIPE point stdout at
    /dev/null so the interpreter's own flush at exit does not raise again."""
    try:
        rc = main()
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
