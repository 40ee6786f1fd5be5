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


@pytest.fixture
def llm_server(monkeypatch):
    """The local fake LLM server (tests/fake_llm_server.py), with both SDKs pointed at it: dummy keys, no
    openai-compatible key (that provider's default "EMPTY" is what a test sees), and 127.0.0.1 kept off any proxy
    the environment names (a proxy would answer instead of the fake)."""
    from tests.fake_llm_server import FakeLLMServer

    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{srv.url}/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dummy")
        monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
        yield srv


def descendants(root: int) -> list[int]:
    """The pids of ``root``'s descendants now, read from /proc (a test's own processes, apart from those of another
    test worker running beside it)."""
    def parent(pid: int) -> int:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return 0

    out = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        p, seen = pid, 0
        while p > 1 and seen < 64:
            p, seen = parent(p), seen + 1
            if p == root:
                out.append(pid)
                break
    return out


@contextlib.contextmanager
def private_cache_evaluator(root: Path, settings):
    """A CPU small-size evaluator whose build cache, PCH and object caches all lie under ``root``: what a test's
    candidates do there touches no cache of the machine's."""
    import harness

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KV_PCH_DIR", str(root / "pch"))
        mp.setenv("KV_OBJECT_CACHE_DIR", str(root / "objects"))
        ev = harness.Evaluator("cpu", "small", settings=settings, cache_dir=root / "cache")
        try:
            yield ev
        finally:
            ev.close()


@pytest.fixture
def fast_models_toml(tmp_path) -> Path:
    """A models.toml with the gpt/claude aliases and millisecond retry backoffs (tests/fake_llm_server.FAST_CONFIG)."""
    from tests.fake_llm_server import FAST_CONFIG

    path = tmp_path / "models.toml"
    path.write_text(FAST_CONFIG)
    return path


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


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode() + (p.read_bytes() if p.is_file() else b"/"))
    return h.hexdigest()


@pytest.fixture(scope="session")
def synthetic_run(tmp_path_factory):
    """The synthetic run (agents/report/synthetic.py), written once per session and shared: read it, never change
    it (a test that changes a run writes its own with write_synthetic_run). Checked unchanged at the session's end."""
    from agents.report.synthetic import write_synthetic_run

    d = tmp_path_factory.mktemp("shared") / "synth"
    write_synthetic_run(d)
    before = _digest(d)
    yield d
    assert _digest(d) == before, f"a test changed the shared synthetic run {d}: give it its own copy"


@pytest.fixture(scope="session")
def synthetic_report(synthetic_run):
    """build_report of the shared synthetic run (200 bootstrap resamples), built once: a test that wants a changed
    report makes a model_copy. Checked unchanged at the session's end."""
    from agents.report import build_report

    rep = build_report(synthetic_run, resamples=200)
    before = rep.model_dump_json()
    yield rep
    assert rep.model_dump_json() == before, "a test changed the shared synthetic report: use model_copy"
