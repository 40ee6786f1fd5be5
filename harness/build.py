"""Build step: import a candidate once so ``load_inline`` compiles into its cached extensions folder.

Run as ``python -m harness.build SOURCE.py``; exit 0 on success, 3 with the error on stderr otherwise.
Builds run in parallel with evaluation (one process each), and a later import hits the cache.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from .candidate import import_candidate


def main(path: str) -> int:
    src = Path(path).read_text()
    try:
        import_candidate(src, Path(path).parent, name="build")
    except BaseException:  # noqa: BLE001
        sys.stderr.write(traceback.format_exc()[-6000:])
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
