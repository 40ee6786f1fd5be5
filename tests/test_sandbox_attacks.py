"""Issue 29 "Done when": one attack per class of the trust boundary (DESIGN.md), each a candidate source evaluated
by a real Evaluator, then an honest candidate of the same problem evaluated by the same Evaluator.

Every test asserts three things:
  1. the attack did not succeed (seen from outside: files, processes, /dev/shm, or a verdict that is ``correct`` only
     if the attack worked);
  2. the attacker gets a clear verdict (one of harness.VERDICTS under both protocols), never a HarnessError;
  3. the honest candidate evaluated next keeps its true verdict (``correct`` under both protocols).

Attacks run in the candidate's top-level code, so a source that mentions ``load_inline`` runs them in its build
process (``harness.build.build`` imports it) and again in its evaluation process; PHASE tells them apart. Attacks that
could harm the machine or the repository are bounded here (a self-limited process flood, a modest /dev/shm file,
new files only, SIGSTOP always followed by SIGCONT, signals only to this test's own descendants) and whatever
they leave behind is removed in ``finally``. No caches of the machine are touched: cache_dir, KV_PCH_DIR and
KV_OBJECT_CACHE_DIR point into a temporary folder for the whole module.

CI installs bubblewrap; nothing here is skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import signal
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest

import harness
from harness import EvalSettings
from tests.conftest import descendants, private_cache_evaluator

PROBLEM = "level1/19_ReLU"
REPO = Path(__file__).resolve().parent.parent
SETTINGS = EvalSettings(naive_timing_trials=20, verified_min_iters=5, verified_max_iters=20,
                        verified_seconds_per_subject=0.5, cpu_threads=1,
                        build_timeout_s=120, eval_timeout_s=120,  # safety timeouts: nothing here takes half of it
                        build_niceness=0,  # on a loaded CI host a niced build waits for CPU longer than it runs
                        prespawn_worker=True, spare_workers=1)  # a waiting worker is "another worker" to attack

HONEST = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

# Top of every attacking source. "load_inline" in the comment gives the source a build process
# (harness.scoring.static_scan.kernel_backend); nothing is compiled.
PRELUDE = """import json, os, sys, time
import torch
import torch.nn as nn
# attack @TOKEN@ (mentions load_inline, so it gets a build process; it compiles nothing)

def _phase():
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    names = (os.path.basename(sys.argv[0] if sys.argv else ""), getattr(main, "name", "") or "")
    return "build" if any("build" in n for n in names) else "eval"

PHASE = _phase()
TOKEN = "@TOKEN@"
"""

RELU_MODEL = """

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _source(body: str, token: str, **subs: str) -> str:
    text = PRELUDE + body
    for k, v in {"TOKEN": token, **subs}.items():
        text = text.replace(f"@{k}@", v)
    return text


# -- fixtures and helpers ---------------------------------------------------------------------------------------
class Ctx:
    def __init__(self, ev: harness.Evaluator, root: Path) -> None:
        self.ev, self.root = ev, root
        self.cache, self.pch, self.objects = root / "cache", root / "pch", root / "objects"


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandbox-attacks")
    with private_cache_evaluator(root, SETTINGS) as ev:
        c = Ctx(ev, root)
        assert_honest(c, "warm-up: the judge and a spare worker run before any attack")
        yield c


def _why(r) -> str:
    rec = r.record
    return (f"status={rec.status} phase={rec.failed_phase} error={(rec.error or '')[-600:]!r} "
            f"naive={r.results['naive'].reasons} verified={r.results['verified'].reasons} "
            f"failed guards={[g.name for g in rec.guards if g.applicable and not g.passed]}")


def assert_honest(c: Ctx, when: str) -> None:
    r = c.ev.evaluate(HONEST, PROBLEM)
    assert r.results["naive"].verdict == "correct" and r.results["verified"].verdict == "correct", \
        f"honest candidate after {when}: {_why(r)}"


def evaluate_attacker(c: Ctx, source: str, ev: harness.Evaluator | None = None):
    """Evaluate an attacker; a HarnessError propagates and fails the test (the attacker must get a verdict)."""
    r = (ev or c.ev).evaluate(source, PROBLEM)
    for p in ("naive", "verified"):
        assert r.results[p].verdict in harness.VERDICTS, f"{p}: no clear verdict: {_why(r)}"
    return r


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def _with_token(token: str) -> list[int]:
    return [pid for pid in _pids() if token in _cmdline(pid) and pid != os.getpid()]


def _kill_all(token: str) -> None:
    """End the processes this test's own attacker started (found by the token in their command line), by pid."""
    for _ in range(20):
        pids = _with_token(token)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _snapshot(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                p = Path(dirpath) / f
                with contextlib.suppress(OSError):
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# -- 1. a build finds the judge and another worker: reads their memory, signals them -------------------------------
JUDGE_ATTACK = """
import ctypes, signal

TEST_PID = @TEST_PID@

def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except Exception:
        return 0

def _ours(pid):  # a descendant of the test process: never touch other users' processes on a shared host
    p = pid
    for _ in range(64):
        p = _ppid(p)
        if p == TEST_PID:
            return True
        if p <= 1:
            return False
    return False

def _read_mem(pid):
    got = 0
    try:
        with open(f"/proc/{pid}/maps") as f:
            regions = [l.split()[0].split("-") for l in f if l.split()[1].startswith("r")][:8]
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as m:
            for lo, hi in regions:
                try:
                    m.seek(int(lo, 16))
                    got += len(m.read(min(4096, int(hi, 16) - int(lo, 16))))
                except OSError:
                    pass
    except OSError:
        pass
    return got

def _vm_read(pid):
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    try:
        with open(f"/proc/{pid}/maps") as f:
            lo = int(next(l for l in f if l.split()[1].startswith("r")).split("-")[0], 16)
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)
        local, remote = iovec(ctypes.addressof(buf), 256), iovec(lo, 256)
        return max(0, libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    except Exception:
        return 0

findings = {"phase": PHASE, "judges": [], "workers": [], "mem_bytes": 0, "vm_bytes": 0, "stopped": [],
            "signal0": []}
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    pid = int(name)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\\0", b" ").decode()
    except OSError:
        continue
    if pid == TEST_PID and "pytest" in cmd:
        try:  # signal 0 only: may this process signal the evaluator (the test process) at all?
            os.kill(pid, 0)
            findings["signal0"].append(pid)
        except OSError:
            pass
        continue
    kind = "judges" if ("harness.judge.judge" in cmd or "harness/judge" in cmd) else \\
           "workers" if ("harness.candidate.worker" in cmd or "harness/candidate/worker" in cmd) else None
    if kind is None or not _ours(pid):
        continue
    findings[kind].append(pid)
    findings["mem_bytes"] += _read_mem(pid)
    findings["vm_bytes"] += _vm_read(pid)
    try:
        os.kill(pid, signal.SIGSTOP)
        findings["stopped"].append(pid)
    except OSError:
        pass
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
raise RuntimeError("KV_FINDINGS " + json.dumps(findings))
""" + RELU_MODEL


def test_build_cannot_reach_the_judge_or_other_workers(ctx):
    token = secrets.token_hex(8)
    judges_before = [p for p in descendants(os.getpid()) if "harness.judge.judge" in _cmdline(p)]
    assert judges_before, "setup: the module's judge should be running while the attacker builds"
    r = evaluate_attacker(ctx, _source(JUDGE_ATTACK, token, TEST_PID=str(os.getpid())))
    m = re.search(r"KV_FINDINGS (\{.*?\})", r.record.error or "")
    assert m, f"the attack's findings should come back as its error (a compile_error of its build): {_why(r)}"
    f = json.loads(m.group(1))
    assert not f["judges"] and not f["workers"], f"candidate code sees the judge/workers in /proc: {f}"
    assert f["mem_bytes"] == 0 and f["vm_bytes"] == 0, f"candidate code read another process's memory: {f}"
    assert not f["stopped"], f"candidate code signalled (SIGSTOP) the judge or a worker: {f}"
    assert not f["signal0"], f"candidate code may signal the evaluator's process: {f}"
    for pid in judges_before:
        assert _state(pid) != "T", f"judge {pid} left stopped"
    assert_honest(ctx, "the judge attack")


# -- 2. a build writes through /proc/<pid>/root around its read-only view ------------------------------------------
PROC_ROOT_ATTACK = """
TARGETS = [@TARGETS@]
written = []
pids = {1, os.getppid(), @TEST_PID@}
pids |= set(sorted(int(n) for n in os.listdir("/proc") if n.isdigit())[:100])
name = "kv_pwned_" + TOKEN[::-1] + "_" + PHASE
for pid in sorted(pids):
    for t in TARGETS:
        where = f"/proc/{pid}/root{t}"
        try:
            with open(os.path.join(where, name), "w") as f:
                f.write("pwned")
            written.append(where)
        except OSError:
            pass
for t in TARGETS:  # and directly, around the view
    try:
        with open(os.path.join(t, name), "w") as f:
            f.write("pwned")
        written.append(t)
    except OSError:
        pass
print("KV_WRITTEN", json.dumps(written[:20]), flush=True)
""" + RELU_MODEL


def test_build_cannot_write_through_proc_root(ctx):
    token = secrets.token_hex(8)
    outside = ctx.root / "outside"
    outside.mkdir(exist_ok=True)
    targets = [ctx.cache, ctx.cache / "extensions", outside]
    src = _source(PROC_ROOT_ATTACK, token, TEST_PID=str(os.getpid()),
                  TARGETS=", ".join(repr(str(t)) for t in targets))
    pattern = f"kv_pwned_{token[::-1]}_*"
    try:
        evaluate_attacker(ctx, src)
        found = [str(p) for t in (ctx.root, ctx.ev._tmp_root) for p in t.rglob(pattern)]
        assert not found, f"candidate code wrote outside its own folders: {found}"
    finally:
        for t in (ctx.root, ctx.ev._tmp_root):
            for p in t.rglob(pattern):
                p.unlink(missing_ok=True)
    assert_honest(ctx, "the /proc/<pid>/root attack")


# -- 3. a build leaves a daemon (double fork + setsid) ---------------------------------------------------------
DAEMON_ATTACK = """
DAEMON = '''
import os, sys, time
out = sys.argv[1]
for _ in range(600):  # ~60 s at most: keep writing where the test looks (a stopped judge would be the real harm)
    try:
        with open(out, "w") as f:
            f.write(str(time.time()))
    except OSError:
        pass
    time.sleep(0.1)
'''

def _daemon(out):
    import subprocess
    if os.fork() == 0:  # the child starts the daemon in a session of its own and exits: the daemon is orphaned
        try:
            subprocess.Popen([sys.executable, "-S", "-c", DAEMON, out, "kvdaemon-" + TOKEN], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os._exit(0)
    os.wait()

_daemon("@OUTSIDE@/kv_daemon_" + TOKEN + "_" + PHASE)
""" + RELU_MODEL


def test_build_leaves_no_daemon(ctx):
    token = secrets.token_hex(8)
    outside = ctx.root / "outside"
    outside.mkdir(exist_ok=True)
    src = _source(DAEMON_ATTACK, token, OUTSIDE=str(outside))
    try:
        evaluate_attacker(ctx, src)
        alive = {pid: _cmdline(pid) for pid in _with_token(f"kvdaemon-{token}")}
        for f in outside.glob(f"kv_daemon_{token}_*"):
            f.unlink()
        time.sleep(1.0)  # a surviving daemon writes again within 0.1 s
        rewritten = [f.name for f in outside.glob(f"kv_daemon_{token}_*")]
        assert not alive, f"processes of the candidate outlived its build/evaluation: {alive}"
        assert not rewritten, f"a daemon of the candidate still writes after its evaluation ended: {rewritten}"
    finally:
        _kill_all(f"kvdaemon-{token}")
    assert_honest(ctx, "the daemon attack")


# -- 4. a build rewrites the compiler shim, the PCH folder, the object cache, another source's extension ----------
# The victim compiles a real shared library at build time through the harness's compiler shim ($CXX: the compile
# launcher and the object cache), and its forward calls it: a swapped .so makes it wrong or crash.
VICTIM = """import ctypes, os, subprocess, tempfile
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline  # noqa: F401 - a compiled candidate: it gets a build process

# victim @TOKEN@
_C = r'''
void kv_relu(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


def _build():
    ext = os.environ.get("TORCH_EXTENSIONS_DIR") or tempfile.mkdtemp()
    so = os.path.join(ext, "kv_victim_@TOKEN@", "kv_victim.so")
    if os.path.isfile(so):
        return so
    try:
        os.makedirs(os.path.dirname(so), exist_ok=True)
    except OSError:
        so = os.path.join(tempfile.mkdtemp(), "kv_victim.so")
    d = os.path.dirname(so)
    with open(os.path.join(d, "kv_victim.cpp"), "w") as f:
        f.write('extern "C" {' + _C + '}')
    cxx = os.environ.get("CXX") or "c++"
    subprocess.run([cxx, "-O2", "-fPIC", "-c", os.path.join(d, "kv_victim.cpp"), "-o", os.path.join(d, "kv_victim.o")],
                   check=True)
    subprocess.run([cxx, "-shared", os.path.join(d, "kv_victim.o"), "-o", so], check=True)
    return so


_lib = ctypes.CDLL(_build())
_lib.kv_relu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.kv_relu(x.data_ptr(), y.data_ptr(), x.numel())
        return y
"""

CACHE_ATTACK = """
ROOTS = [r for r in (os.environ.get("KV_PCH_DIR"), os.environ.get("KV_OBJECT_CACHE_DIR"), "@CACHE@") if r]
OWN = os.path.realpath(os.environ.get("TORCH_EXTENSIONS_DIR") or "/nonexistent")  # its own build folder: fair game
MARK = TOKEN[::-1].encode()  # not the literal of this source: a hit in the caches is a write of this attack
done = []

def _try(what, fn):
    try:
        fn()
        done.append(what)
    except OSError:
        pass

def _append(p, data):
    with open(p, "ab") as f:
        f.write(data)

def _overwrite(p, data):
    with open(p, "r+b") as f:
        f.write(data)

for var in ("CXX", "PYTORCH_NVCC", "CC"):  # the compiler shims every later build runs
    p = os.environ.get(var)
    if p and os.path.isfile(p):
        _try(f"shim {p}", lambda p=p: _append(p, b"\\n# " + MARK + b"\\n"))
for root in ROOTS:
    for dirpath, dirs, files in os.walk(root):
        if os.path.realpath(dirpath).startswith(OWN):
            continue
        for f in files:
            p = os.path.join(dirpath, f)
            if f.endswith((".lock", "lock")):
                continue
            if f.endswith((".so", ".o", ".gch")) or "kv-shims" in p:
                _try(f"overwrite {p}", lambda p=p: _overwrite(p, b"\\x7fELF" + MARK))
            else:
                _try(f"append {p}", lambda p=p: _append(p, MARK))
        for d in dirs:  # a marker that makes another folder look built
            if os.path.realpath(os.path.join(dirpath, d)) != OWN:
                _try(f"marker {d}", lambda d=d: _append(os.path.join(dirpath, d, ".built-ok"), MARK))
    # plant: a PCH any later build would trust, an object, a whole extension folder
    _try(f"plant {root}", lambda root=root: (os.makedirs(os.path.join(root, "kvpw" + TOKEN[::-1], "torch"), exist_ok=True),
                                              _append(os.path.join(root, "kvpw" + TOKEN[::-1], "torch", "extension.h.gch"), MARK)))
print("KV_DONE", json.dumps(done[:30]), flush=True)
""" + RELU_MODEL


def test_build_cannot_rewrite_the_shared_caches(ctx):
    token = secrets.token_hex(8)
    victim = VICTIM.replace("@TOKEN@", token)
    r = ctx.ev.evaluate(victim, PROBLEM)
    assert r.results["naive"].verdict == "correct" and r.results["verified"].verdict == "correct", \
        f"setup: the victim (compiled through the harness's shim) should be correct: {_why(r)}"
    roots = (ctx.cache, ctx.pch, ctx.objects)
    before = _snapshot(*roots)
    mine = [p for p in before if "kv-shims" in p or f"kv_victim_{token}" in p]  # the shims, the victim's build
    evaluate_attacker(ctx, _source(CACHE_ATTACK, token, CACHE=str(ctx.cache)))
    after = _snapshot(*roots)
    # Whatever the attack wrote carries its mark (the reversed token, which no source text contains); the harness may
    # update its own index files meanwhile, so other changes are not counted, but the shims and the victim's
    # files must be byte for byte as they were.
    mark = token[::-1]
    touched = sorted(p for p in after if mark in p or mark.encode() in Path(p).read_bytes())
    changed = sorted(p for p in mine if after.get(p) != before[p])
    assert not touched, f"candidate code wrote into the shared caches ({len(touched)} files): {touched[:8]}"
    assert not changed, f"the compiler shim / the victim's built extension changed: {changed[:8]}"
    r = ctx.ev.evaluate(victim, PROBLEM)
    assert r.results["naive"].verdict == "correct" and r.results["verified"].verdict == "correct", \
        f"the victim's build was tampered with: {_why(r)}"
    assert_honest(ctx, "the cache attack")


# -- 5. a build or evaluation writes the harness's own files, the problems, the virtualenv ---------------------------
TREE_ATTACK = """
import sysconfig
try:
    import harness as _h, problems as _p
    mods = [os.path.dirname(_h.__file__), os.path.dirname(_p.__file__), os.path.dirname(torch.__file__)]
except Exception:
    mods = []
DIRS = [@DIRS@] + mods + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
hits = []
for d in DIRS:
    p = os.path.join(d, "_pwned_" + TOKEN + "_" + PHASE + ".py")
    try:
        with open(p, "x") as f:
            f.write("# written by candidate code\\n")
        hits.append(p)
    except OSError:
        pass
print("KV_HITS", json.dumps(hits), flush=True)
""" + RELU_MODEL


def _tree_dirs() -> list[Path]:
    return [REPO / "harness", REPO / "problems", REPO, Path(sysconfig.get_paths()["purelib"]),
            Path(sysconfig.get_paths()["platlib"]), Path(sys.prefix), Path(__import__("torch").__file__).parent]


def test_candidate_cannot_write_the_harness_or_the_virtualenv(ctx):
    token = secrets.token_hex(8)
    dirs = _tree_dirs()
    src = _source(TREE_ATTACK, token, DIRS=", ".join(repr(str(d)) for d in dirs))
    try:
        evaluate_attacker(ctx, src)
        found = [str(p) for d in set(dirs) for p in d.glob(f"_pwned_{token}_*.py")]
        assert not found, f"candidate code wrote into the harness/problems/virtualenv: {found}"
    finally:
        for d in set(dirs):
            for p in d.glob(f"_pwned_{token}_*.py"):
                p.unlink(missing_ok=True)
    assert_honest(ctx, "the source-tree attack")


# -- 6. an evaluation fills /dev/shm -------------------------------------------------------------------------------
SHM_CAP = 1536 * 2**20  # the evaluator's memory cap for this test: a CPU worker of a small ReLU needs far less
SHM_ATTACK = """
import tempfile
TARGET = @TARGET@
CHUNK = 32 * 2**20
path, wrote = "/dev/shm/kv_shm_" + TOKEN, 0
try:
    with open(path, "wb") as f:
        block = b"\\xa5" * CHUNK
        while wrote < TARGET:
            f.write(block)
            f.flush()
            wrote += CHUNK
except OSError:
    pass
print("KV_SHM_WROTE", wrote, flush=True)
HELD = wrote >= TARGET and os.path.exists(path)


class ModelNew(nn.Module):
    def forward(self, x):  # correct only while it holds more shared memory than its cap: the attack worked
        return torch.relu(x) if HELD and os.path.getsize(path) >= TARGET else torch.zeros_like(x)
"""


def test_evaluation_cannot_fill_dev_shm(ctx):
    token = secrets.token_hex(8)
    settings = SETTINGS.model_copy(update=dict(memory_limit_bytes=SHM_CAP, prespawn_worker=False))
    ev = harness.Evaluator("cpu", "small", settings=settings, cache_dir=ctx.cache)
    target = SHM_CAP + 256 * 2**20
    src = _source(SHM_ATTACK, token, TARGET=str(target)).replace("load_inline", "no build")  # the evaluation itself
    try:
        r = evaluate_attacker(ctx, src, ev)
        left = list(Path("/dev/shm").glob(f"*{token}*"))
        assert not left, f"the candidate's /dev/shm file outlived its evaluation: {left}"
        assert r.results["naive"].verdict != "correct", \
            f"the candidate held {target} bytes of /dev/shm, over its {SHM_CAP}-byte memory cap: {_why(r)} " \
            f"stdout={r.record.stdout_tail[-200:]!r}"
        h = ev.evaluate(HONEST, PROBLEM)
        assert h.results["naive"].verdict == "correct" and h.results["verified"].verdict == "correct", _why(h)
    finally:
        ev.close()
        for p in Path("/dev/shm").glob(f"*{token}*"):
            p.unlink(missing_ok=True)
    assert_honest(ctx, "the /dev/shm attack")


# -- 7. a process flood (fork bomb) in the evaluation ------------------------------------------------------------------
# Bounded here so that it cannot take the shared test machine down: children are `sleep` (tiny), spawned in a flat
# loop up to FLOOD processes or 20 s, and end by themselves within 40 s. The sandbox's pids limit must stop it
# earlier (so it must be well below FLOOD).
FLOOD = 2000
FORK_ATTACK = """
SLEEP = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"
n, t0 = 0, time.time()
try:
    while n < @FLOOD@ and time.time() - t0 < 20:
        os.posix_spawn(SLEEP, [SLEEP, "40.@NUM@"], os.environ)
        n += 1
except OSError:
    pass
print("KV_SPAWNED", n, flush=True)
FLOODED = n >= @FLOOD@


class ModelNew(nn.Module):
    def forward(self, x):  # correct only if nothing bounded its processes: the attack worked
        return torch.relu(x) if FLOODED else torch.zeros_like(x)
"""


def test_evaluation_process_flood_is_bounded(ctx):
    token = secrets.token_hex(8)
    num = str(secrets.randbelow(10**8)).zfill(8)  # the children's command line: sleep 40.<num>
    src = _source(FORK_ATTACK, token, FLOOD=str(FLOOD), NUM=num).replace("load_inline", "no build")
    t0 = time.monotonic()
    try:
        r = evaluate_attacker(ctx, src)
        took = time.monotonic() - t0
        left = _with_token(f"40.{num}")
        assert not left, f"{len(left)} processes of the candidate outlived its evaluation"
        assert r.results["naive"].verdict != "correct", \
            f"the candidate started {FLOOD} processes unhindered (no pids limit): {_why(r)} " \
            f"stdout={r.record.stdout_tail[-200:]!r}"
        assert took < SETTINGS.eval_timeout_s, f"the flood held the evaluation {took:.0f} s"
    finally:
        _kill_all(f"40.{num}")
    assert_honest(ctx, "the process flood")


# -- 8. an evaluation reads a concurrently running candidate's source ---------------------------------------------------
VICTIM_SLOW = """import os, sys, time
import torch
import torch.nn as nn
# slow to build (load_inline mentioned: a build process), holding a secret in its source text
SECRET = "kvsecret-@SECRET@"
if "build" in os.path.basename(sys.argv[0] if sys.argv else ""):
    time.sleep(8)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

SNOOP_ATTACK = """
import glob, re
PAT = re.compile(("kvsec" + "ret-") + "([0-9a-f]{32})")

def _roots():
    up = os.path.dirname(os.getcwd())  # the evaluator's folder of work folders, on the host
    rs = ([up] if up != "/" else []) + ["@CACHE@", "/dev/shm"] + glob.glob("/tmp/kv-eval-*")
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            rs.append(f"/proc/{name}/cwd")
    return rs

def _scan():
    seen = 0
    for root in _roots():
        for dirpath, dirs, files in os.walk(root):
            for f in files:
                seen += 1
                if seen > 20000:
                    return None
                try:
                    p = os.path.join(dirpath, f)
                    if os.path.getsize(p) < 2**20:
                        with open(p, "rb") as fh:
                            m = PAT.search(fh.read().decode("latin-1"))
                        if m:
                            return m.group(1)
                except OSError:
                    pass
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    m = PAT.search(fh.read().decode("latin-1"))
                if m:
                    return m.group(1)
            except OSError:
                pass
    return None

STOLEN, t0 = None, time.time()
while STOLEN is None and time.time() - t0 < 8:
    STOLEN = _scan()
    if STOLEN is None:
        time.sleep(0.3)
print("KV_STOLEN", STOLEN, flush=True)


class ModelNew(nn.Module):
    def forward(self, x):  # correct only if it read the other candidate's source: the attack worked
        return torch.relu(x) if STOLEN else torch.zeros_like(x)
"""


def test_evaluation_cannot_read_a_concurrent_candidates_source(ctx):
    token, secret = secrets.token_hex(8), secrets.token_hex(16)
    victim = VICTIM_SLOW.replace("@SECRET@", secret)
    got: dict = {}

    def run_victim():
        try:
            got["r"] = ctx.ev.evaluate(victim, PROBLEM)
        except BaseException as exc:  # noqa: BLE001 - reported below
            got["exc"] = exc

    th = threading.Thread(target=run_victim, daemon=True)
    th.start()
    time.sleep(1.0)  # its build process holds the source now (and imports torch for a few seconds, then sleeps 8 s)
    src = _source(SNOOP_ATTACK, token, CACHE=str(ctx.cache)).replace("load_inline", "no build")
    r = evaluate_attacker(ctx, src)
    th.join(timeout=SETTINGS.build_timeout_s + SETTINGS.eval_timeout_s)
    assert not th.is_alive(), "the victim's evaluation did not end"
    assert secret not in (r.record.stdout_tail or ""), "candidate code read a concurrent candidate's source"
    assert r.results["naive"].verdict != "correct", f"candidate code read a concurrent candidate's source: {_why(r)}"
    assert "exc" not in got, f"the victim's evaluation failed: {got.get('exc')!r}"
    v = got["r"]
    assert v.results["naive"].verdict == "correct" and v.results["verified"].verdict == "correct", _why(v)
    assert_honest(ctx, "the snooping attack")
