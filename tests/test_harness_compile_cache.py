"""Object reuse across extension builds (harness/build/compile_launcher.py) and the compiler shims that
route torch's compilers through it (harness.build.build.compiler_shims)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.build import build as B
from harness.build.compile_launcher import parse_depfile

LAUNCHER = Path(B.__file__).with_name("compile_launcher.py")

# A stand-in compiler: logs its argv, writes "-o" (object = the source's text plus the -D flags, so
# reuse is visible) and a gcc-style depfile naming one header (FAKE_HEADER) when given -MF.
FAKE_CC = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "fakecc 1.0"; exit 0; fi
echo "$@" >> "$FAKE_LOG"
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
out=""; src=""; dep=""; prev=""; defs=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"; [ "$prev" = "-c" ] && src="$a"; [ "$prev" = "-MF" ] && dep="$a"
  case "$a" in -D*) defs="$defs $a";; esac
  prev="$a"
done
[ -n "$FAKE_FAIL" ] && { echo "fake failure" >&2; exit 1; }
{ cat "$src"; echo "$defs"; } > "$out"
[ -n "$dep" ] && printf '%s: %s \\\\\\n %s\\n' "$out" "$src" "$FAKE_HEADER" > "$dep"
exit 0
"""


@pytest.fixture
def cc(tmp_path, monkeypatch):
    exe = tmp_path / "fakecc"
    exe.write_text(FAKE_CC)
    exe.chmod(0o755)
    header = tmp_path / "inc" / "lib.h"
    header.parent.mkdir()
    header.write_text("int f();\n")
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_HEADER", str(header))
    for v in ("FAKE_FAIL", "FAKE_SLEEP"):
        monkeypatch.delenv(v, raising=False)
    return exe, log, header


def calls(log: Path) -> list[list[str]]:
    return [shlex.split(line) for line in log.read_text().splitlines()] if log.exists() else []


def build_dir(tmp_path: Path, name: str, source: str = "int main_cpp;\n") -> Path:
    d = tmp_path / "ext" / name
    d.mkdir(parents=True)
    (d / "main.cpp").write_text(source)
    return d


def launch(objects: Path | None, d: Path, cmd: list[str], include: Path | None = None,
           env: dict | None = None) -> subprocess.CompletedProcess:
    opts = (["--objects", str(objects)] if objects else []) + (["--include", str(include)] if include else [])
    return subprocess.run([sys.executable, "-S", str(LAUNCHER), *opts, "--", *cmd], cwd=d,
                          capture_output=True, text=True, timeout=120, env=env)


def compile_cmd(exe: Path, d: Path, name: str = "ext_a") -> list[str]:
    # The shape of torch's "compile" rule: $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags
    return [str(exe), "-MMD", "-MF", "main.o.d", f"-DTORCH_EXTENSION_NAME={name}", "-isystem",
            str(Path(os.environ["FAKE_HEADER"]).parent), "-fPIC", "-c", str(d / "main.cpp"), "-o", "main.o"]


def test_an_unchanged_unit_is_compiled_once_and_reused_in_another_build_folder(tmp_path, cc):
    exe, log, header = cc
    objects = tmp_path / "objects"
    a, b = build_dir(tmp_path, "a"), build_dir(tmp_path, "b")
    assert launch(objects, a, compile_cmd(exe, a)).returncode == 0
    assert launch(objects, b, compile_cmd(exe, b)).returncode == 0
    assert len(calls(log)) == 1
    assert (b / "main.o").read_bytes() == (a / "main.o").read_bytes()
    # The depfile ninja reads names this build's own source, not the folder it was first compiled in.
    assert parse_depfile((b / "main.o.d").read_text()) == [str(b / "main.cpp"), str(header)]
    log_lines = [json.loads(x) for x in (objects / "compiles.jsonl").read_text().splitlines()]
    assert [(x["unit"], x["hit"]) for x in log_lines] == [("main.cpp", False), ("main.cpp", True)]


def test_a_changed_source_flag_or_header_compiles_again(tmp_path, cc):
    exe, log, header = cc
    objects = tmp_path / "objects"
    a = build_dir(tmp_path, "a")
    assert launch(objects, a, compile_cmd(exe, a)).returncode == 0
    b = build_dir(tmp_path, "b", source="int main_cpp; // changed\n")
    assert launch(objects, b, compile_cmd(exe, b)).returncode == 0
    c = build_dir(tmp_path, "c")
    assert launch(objects, c, compile_cmd(exe, c, name="ext_other")).returncode == 0  # the module name
    assert "ext_other" in (c / "main.o").read_text()
    assert len(calls(log)) == 3
    time.sleep(0.01)
    header.write_text("int f(); int g();\n")
    d = build_dir(tmp_path, "d")
    assert launch(objects, d, compile_cmd(exe, d)).returncode == 0
    assert len(calls(log)) == 4


def test_a_failed_compile_is_reported_and_not_stored(tmp_path, cc, monkeypatch):
    exe, log, _ = cc
    objects = tmp_path / "objects"
    monkeypatch.setenv("FAKE_FAIL", "1")
    a = build_dir(tmp_path, "a")
    r = launch(objects, a, compile_cmd(exe, a))
    assert r.returncode == 1 and "fake failure" in r.stderr
    monkeypatch.delenv("FAKE_FAIL")
    b = build_dir(tmp_path, "b")
    assert launch(objects, b, compile_cmd(exe, b)).returncode == 0
    assert len(calls(log)) == 2


def test_a_command_without_a_depfile_gets_one_for_the_header_check(tmp_path, cc):
    """torch's cuda_compile rule has no depfile: the launcher asks for one so headers are still checked."""
    exe, log, header = cc
    objects = tmp_path / "objects"
    a = build_dir(tmp_path, "a")
    cmd = [str(exe), "-DTORCH_EXTENSION_NAME=x", "-c", str(a / "main.cpp"), "-o", "cuda.o"]
    assert launch(objects, a, cmd).returncode == 0
    assert calls(log)[0][-3:-1] == ["-MD", "-MF"] and not list(a.glob("*.kvdeps"))
    time.sleep(0.01)
    header.write_text("changed\n")
    b = build_dir(tmp_path, "b")
    assert launch(objects, b, [*cmd[:3], str(b / "main.cpp"), *cmd[4:]]).returncode == 0
    assert len(calls(log)) == 2


def test_concurrent_builds_of_one_unit_compile_it_once(tmp_path, cc, monkeypatch):
    exe, log, _ = cc
    objects = tmp_path / "objects"
    monkeypatch.setenv("FAKE_SLEEP", "1")
    dirs = [build_dir(tmp_path, f"d{i}") for i in range(3)]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda d: launch(objects, d, compile_cmd(exe, d)), dirs))
    assert [r.returncode for r in results] == [0, 0, 0]
    assert len(calls(log)) == 1
    assert len({(d / "main.o").read_bytes() for d in dirs}) == 1


def test_a_unit_compiled_before_the_pch_existed_serves_builds_that_have_it(tmp_path, cc):
    """The first wave of builds compiles without the PCH (it is being made): their resubmissions, which
    get it, must still reuse those objects, since a PCH never changes what is compiled."""
    exe, log, _ = cc
    objects = tmp_path / "objects"
    a, b = build_dir(tmp_path, "a"), build_dir(tmp_path, "b")
    assert launch(objects, a, compile_cmd(exe, a)).returncode == 0
    assert launch(objects, b, compile_cmd(exe, b), include=tmp_path / "pch").returncode == 0
    assert len(calls(log)) == 1 and (b / "main.o").read_bytes() == (a / "main.o").read_bytes()
    c = build_dir(tmp_path, "c", source="int other;\n")
    assert launch(objects, c, compile_cmd(exe, c), include=tmp_path / "pch").returncode == 0
    assert calls(log)[1][:2] == ["-I", str(tmp_path / "pch")]  # a miss compiles with it


def test_links_pass_through_and_the_pch_folder_goes_first_on_compiles_only(tmp_path, cc):
    exe, log, _ = cc
    a = build_dir(tmp_path, "a")
    pch = tmp_path / "pch"
    assert launch(None, a, compile_cmd(exe, a), include=pch).returncode == 0
    assert calls(log)[0][:2] == ["-I", str(pch)]
    (a / "x.o").write_text("")
    assert launch(tmp_path / "objects", a, [str(exe), "main.o", "-shared", "-o", "ext.so"], include=pch).returncode == 0
    assert calls(log)[1] == ["main.o", "-shared", "-o", "ext.so"]
    assert not (tmp_path / "objects").exists()


def test_shims_route_torchs_compilers_through_the_launcher(tmp_path, cc, monkeypatch):
    """CXX and PYTORCH_NVCC name shims (the same for build and candidate processes); the C++ one adds
    the PCH folder the build step chose, nvcc's does not; objects go where KV_OBJECT_CACHE_DIR says."""
    exe, log, _ = cc
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(FAKE_CC)
    nvcc.chmod(0o755)
    monkeypatch.setenv("CXX", str(exe))
    monkeypatch.setenv("PYTORCH_NVCC", str(nvcc))
    shims = B.compiler_shims(tmp_path / "root")
    assert set(shims) == {"CXX", "PYTORCH_NVCC"} and B.compiler_shims(tmp_path / "root") == shims
    monkeypatch.setenv("KV_OBJECT_CACHE_DIR", str(tmp_path / "objects"))
    monkeypatch.setenv("KV_PCH_INCLUDE", str(tmp_path / "pch"))
    a = build_dir(tmp_path, "a")
    for var in ("CXX", "PYTORCH_NVCC"):
        r = subprocess.run([shims[var], *compile_cmd(exe, a)[1:]], cwd=a, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    cxx_call, nvcc_call = calls(log)
    assert cxx_call[:2] == ["-I", str(tmp_path / "pch")] and "-I" not in nvcc_call
    assert len(list((tmp_path / "objects").glob("??/*/object"))) == 2
    # A shim is never wrapped in another (a child process inherits CXX already pointing at one): a shim of another
    # root (one a sandboxed build cannot see) becomes this root's shim of the same compiler.
    monkeypatch.setenv("CXX", shims["CXX"])
    monkeypatch.setenv("PYTORCH_NVCC", shims["PYTORCH_NVCC"])
    assert B.compiler_shims(tmp_path / "root") == shims
    other = B.compiler_shims(tmp_path / "other")
    assert set(other) == {"CXX", "PYTORCH_NVCC"} and all(str(tmp_path / "other") in v for v in other.values())
    assert [Path(p).read_text() for p in other.values()] == [Path(p).read_text() for p in shims.values()]


@pytest.mark.slow
@pytest.mark.xdist_group("sigmoid_build")  # shares tests/conftest.py's build with test_harness_pch.py
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux builds")
def test_candidate_builds_never_share_compiled_units_and_a_pre_started_worker_finds_its_build(sigmoid_built,
                                                                                               monkeypatch):
    """A real C++ extension build by the Evaluator, made with ``KV_OBJECT_CACHE_DIR`` naming an object cache (the
    fixture's): that cache is for trusted in-process builds only (an object one candidate's build produced could
    reach another whose unit has the same text), so the build writes nothing there and reads nothing from it. The
    candidate's own ``load_inline`` at evaluation, also in a pre-started worker, finds its build up to date and
    links nothing again. (A second build of the same kernel would prove nothing more: an unused cache is empty.)"""
    import harness

    objects = sigmoid_built.objects
    monkeypatch.setenv("KV_OBJECT_CACHE_DIR", str(objects))
    src, cache, first = sigmoid_built.source, sigmoid_built.cache, sigmoid_built.first
    assert first.ok and not first.cached, first.error
    assert not (objects / "compiles.jsonl").exists() and not any(objects.rglob("*.o"))
    with harness.Evaluator("cpu", "small", cache_dir=cache, settings=harness.EvalSettings(prespawn_worker=True)) as ev:
        built = {p: p.stat().st_mtime_ns for p in ev.extensions_dir(src).rglob("*.so")}
        plain = ev.evaluate(src, "level1/21_Sigmoid")
        spared = ev.evaluate(src, "level1/21_Sigmoid")
    assert plain.record.status == "ok" and not plain.record.worker_prespawned, plain.record.error
    assert spared.record.worker_prespawned and spared.record.status == "ok", spared.record.error
    assert plain.results["naive"].verdict == spared.results["naive"].verdict == "correct"
    assert built and all(p.stat().st_mtime_ns == t for p, t in built.items())  # not even linked again
    assert not (objects / "compiles.jsonl").exists() and not any(objects.rglob("*.o"))


def _pch_being_made(tmp_path: Path):
    """A PCH folder whose maker (here: this test) holds its lock; returns (folder, lock file)."""
    import fcntl

    pch = tmp_path / "pch" / "k"
    (pch / "torch").mkdir(parents=True)
    held = open(pch / ".lock", "a")
    fcntl.flock(held, fcntl.LOCK_EX)
    return pch, held


@pytest.mark.parametrize("objects", [True, False], ids=["object-cache", "no-object-cache"])
def test_a_compile_waits_for_a_pch_being_made_then_uses_it(tmp_path, cc, objects):
    exe, log, _ = cc
    d = build_dir(tmp_path, "a")
    pch, held = _pch_being_made(tmp_path)
    env = {**os.environ, "KV_PCH_WAIT_S": "60"}
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        fut = pool.submit(launch, tmp_path / "objects" if objects else None, d, compile_cmd(exe, d), pch, env)
        time.sleep(1.5)
        assert not fut.done() and not calls(log)  # waiting: the compiler has not run
        (pch / "torch" / "extension.h.gch").write_text("pch")
        held.close()  # the maker is done
        r = fut.result()
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - started >= 1.5
    (call,) = calls(log)
    assert call[:2] == ["-I", str(pch)]


def test_a_pch_wait_is_bounded_and_absent_without_a_limit(tmp_path, cc):
    exe, log, _ = cc
    pch, held = _pch_being_made(tmp_path)
    with held:
        t0 = time.monotonic()
        r = launch(tmp_path / "objects", build_dir(tmp_path, "a"), compile_cmd(exe, tmp_path / "ext" / "a"), pch,
                   {**os.environ, "KV_PCH_WAIT_S": "1"})
        assert r.returncode == 0 and 1 <= time.monotonic() - t0 < 30  # gave up after its limit, compiled
        t0 = time.monotonic()
        env = {k: v for k, v in os.environ.items() if k != "KV_PCH_WAIT_S"}
        r = launch(tmp_path / "objects2", build_dir(tmp_path, "b"), compile_cmd(exe, tmp_path / "ext" / "b"), pch, env)
        assert r.returncode == 0 and time.monotonic() - t0 < 1  # no limit given: no wait
    assert len(calls(log)) == 2


def test_a_cached_object_does_not_wait_for_a_pch(tmp_path, cc):
    exe, log, _ = cc
    d = build_dir(tmp_path, "a")
    assert launch(tmp_path / "objects", d, compile_cmd(exe, d)).returncode == 0
    pch, held = _pch_being_made(tmp_path)
    with held:
        t0 = time.monotonic()
        d2 = build_dir(tmp_path, "b")
        r = launch(tmp_path / "objects", d2, compile_cmd(exe, d2), pch, {**os.environ, "KV_PCH_WAIT_S": "60"})
        assert r.returncode == 0 and time.monotonic() - t0 < 10
    assert len(calls(log)) == 1  # restored from the cache, not compiled, not waited for


def test_the_object_cache_is_trimmed_by_bytes_as_well_as_by_count_least_recently_used_first(tmp_path):
    from harness.build.compile_launcher import _trim

    def entry(name: str, size: int, age: int) -> Path:
        e = tmp_path / name[:2] / name
        e.mkdir(parents=True)
        (e / "object").write_bytes(b"x" * size)
        os.utime(e, (time.time() - age, time.time() - age))
        return e

    old, mid, new = entry("aa1", 600, 300), entry("bb2", 300, 200), entry("cc3", 300, 100)
    _trim(tmp_path, max_entries=100, max_bytes=2000)  # under both caps: nothing goes
    assert old.exists() and mid.exists() and new.exists()
    _trim(tmp_path, max_entries=100, max_bytes=1000)  # 1200 bytes: the oldest goes, 600 <= 900 remain
    assert not old.exists() and mid.exists() and new.exists()
    newest = entry("dd4", 10, 0)
    _trim(tmp_path, max_entries=2, max_bytes=10**9)  # three entries over a cap of two: down to 1.8, newest kept
    assert not mid.exists() and not new.exists() and newest.exists()
