"""Fixtures that several test modules share. The expensive work behind one happens once per run, not once per
module or per xdist worker: it is done under a file lock in a folder every worker of the run sees, and its result
kept there for the others. (The tests also carry an ``xdist_group`` mark, but with pytest 9.2 xdist's
``--dist loadgroup`` no longer keeps such tests on one worker: pytest-xdist issue #1386.)"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIGMOID_GROUP = "sigmoid_build"  # the xdist_group of the tests that use ``sigmoid_built``


@contextlib.contextmanager
def run_wide(tmp_path_factory, name: str):
    """A folder shared by every xdist worker of this run (their base temporary folders' parent; this session's own
    without xdist), held under an exclusive lock: the first worker to get it does the work, later ones find it."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


@pytest.fixture(scope="session")
def sigmoid_built(tmp_path_factory):
    """A demo kernel (l1_21_sigmoid) built by an Evaluator, sandboxed like any candidate's build, with
    ``KV_OBJECT_CACHE_DIR`` naming an object cache that a candidate's build must leave alone; built once per run.
    Returns its source, the Evaluator's cache folder, that object cache, the build's result and its extensions
    folder."""
    import harness
    from harness.builds import BuildResult

    source = (ROOT / "agents" / "demo_kernels" / "cpu" / "l1_21_sigmoid.py").read_text()
    with run_wide(tmp_path_factory, f"sigmoid-{hashlib.sha256(source.encode()).hexdigest()[:16]}") as root:
        objects, done = root / "objects", root / "built.json"
        if not done.exists():
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("KV_OBJECT_CACHE_DIR", str(objects))
                with harness.Evaluator("cpu", "small", cache_dir=root / "cache") as ev:
                    first = ev.build(source)
                    ext = ev.extensions_dir(source)
            done.write_text(json.dumps({"first": list(first), "ext": str(ext)}))
        saved = json.loads(done.read_text())
    return SimpleNamespace(source=source, cache=root / "cache", objects=objects, first=BuildResult(*saved["first"]),
                           ext=Path(saved["ext"]))
