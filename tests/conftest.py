"""Fixtures that several test modules share. A test that uses one carries its ``xdist_group`` mark, so that under
``-n`` (pyproject's addopts: ``--dist loadgroup``) those tests run in one worker and the expensive work behind the
fixture happens once per run, not once per module or per worker."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIGMOID_GROUP = "sigmoid_build"  # the xdist_group of the tests that use ``sigmoid_built``


@pytest.fixture(scope="session")
def sigmoid_built(tmp_path_factory):
    """A demo kernel (l1_21_sigmoid) built by an Evaluator, sandboxed like any candidate's build, with
    ``KV_OBJECT_CACHE_DIR`` naming an object cache that a candidate's build must leave alone. Returns its source,
    the Evaluator's cache folder, that object cache, the build's result and its extensions folder."""
    import harness

    root = tmp_path_factory.mktemp("sigmoid")
    source = (ROOT / "agents" / "demo_kernels" / "cpu" / "l1_21_sigmoid.py").read_text()
    objects = root / "objects"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KV_OBJECT_CACHE_DIR", str(objects))
        with harness.Evaluator("cpu", "small", cache_dir=root / "cache") as ev:
            first = ev.build(source)
            ext = ev.extensions_dir(source)
    return SimpleNamespace(source=source, cache=root / "cache", objects=objects, first=first, ext=ext)
