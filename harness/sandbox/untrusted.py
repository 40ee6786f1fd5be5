"""Reading, as the evaluator, a file in a folder candidate code could write (its work folder, its build folder).

Candidate code may replace any name there before the evaluator reads it: with a symlink the evaluator would follow
as root, in its own namespace (``/proc/self/environ`` put the evaluator's API keys into a record), with a FIFO whose
``open`` never returns (a hung sweep), or with a link to an endless file (``/dev/zero``: the evaluator's memory).
So such a file is opened without following a symlink, without blocking, read only when it is a regular file, and
never past ``limit`` bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_bounded(path: Path | str, limit: int, *, from_end: bool = False) -> bytes:
    """At most ``limit`` bytes of ``path`` (its last ones with ``from_end``); b"" unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b""
        pos = max(0, st.st_size - limit) if from_end else 0
        chunks, left = [], limit
        while left > 0:
            chunk = os.pread(fd, left, pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)
