"""Loading a candidate source as a module (from a real file, so Triton's JIT can read its source)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import types
from pathlib import Path


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def import_candidate(source: str, work_dir: Path, name: str = "candidate") -> types.ModuleType:
    """Write the source beside the work dir and import it. Exceptions propagate to the caller."""
    path = work_dir / f"{name}_{source_hash(source)[:12]}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod
