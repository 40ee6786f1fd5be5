"""Starting child processes: the judge (trusted) plainly, everything that runs candidate code inside the sandbox.

Every child: its own session (killed as a group), a wall-clock limit, a cap on file size (stdout spam), no core
files, stdout/stderr to files that are never parsed, and it dies with the thread that started it. A child started
with a ``Policy`` runs inside bubblewrap (``harness.sandbox.policy``) under a seccomp filter
(``harness.sandbox.seccomp``) and in a cgroup of its own (``harness.sandbox.cgroup``) that caps its whole tree's
memory and processes; where no cgroup can be made, its resident memory is polled instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .cgroup import Cgroup
from .policy import Policy, account_files, command
from .seccomp import filter_fd
from .untrusted import read_bounded

PR_SET_PDEATHSIG = 1
DEFAULT_PIDS_MAX = 1024  # threads and processes of one sandbox (torch's pools and a compiler's jobs fit easily)


def _die_with_parent() -> None:
    """The child runs in its own session (so it can be killed as a group); without this, a sweep killed
    with SIGKILL would leave its builds and evaluations running as orphans. Linux only; best effort.
    (The signal follows the thread that started the child, which waits on it until it ends.)"""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def _preexec(max_file_bytes: int, niceness: int = 0, die_with_parent: bool = True, cgroup_procs: tuple[str, ...] = ()):
    def run() -> None:
        for f in cgroup_procs:  # before exec: everything the sandbox starts is born inside the cgroup
            with open(f, "w") as fh:
                fh.write(str(os.getpid()))
        if die_with_parent:
            _die_with_parent()
        if niceness:
            os.nice(niceness)
            # With autogroup scheduling (Linux's default on desktops and many VMs) each session gets
            # its own group and CPU is split between groups first: a nice value alone does nothing
            # against processes of other sessions. This child's session is new; nice its group too.
            with contextlib.suppress(OSError):
                with open("/proc/self/autogroup", "w") as f:
                    f.write(str(niceness))
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return run


_names = itertools.count()


@dataclass
class ChildResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    stdout_tail: str
    stderr_tail: str
    memory_exceeded: int | None = None  # bytes of RSS seen when the tree was stopped for it

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


def sandbox_setup_failed(stderr: str) -> bool:
    """Whether a sandboxed child's error output is bubblewrap's own, printed as it set the sandbox up, before anything
    ran inside: a recursive bind of / remounts every mount below it read-only, and one that another sandbox's teardown
    unmounted meanwhile (a candidate's disk cap under the evaluator's tmp root) fails that remount (CI 2026-12-07:
    `bwrap: Can't bind mount /oldroot/ on /newroot/: ... No such file or directory`). Worth one more try; never the
    candidate's verdict."""
    return stderr.lstrip().startswith("bwrap: ")


def tail(path: Path, nbytes: int = 4000) -> str:
    """The last ``nbytes`` of a child's log file. It lies in the child's own folder, where a sandboxed child may have
    replaced it (a symlink, a FIFO): read as ``harness.sandbox.untrusted`` reads such files."""
    return read_bounded(path, nbytes, from_end=True).decode("utf-8", "replace")


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


@dataclass
class Child:
    """A child that is running (``spawn_module``); ``wait_child`` collects it."""

    proc: subprocess.Popen
    out_path: Path
    err_path: Path
    started: float
    cgroup: Cgroup | None = None  # a sandboxed child's limits; None: not sandboxed, or polled instead

    def end(self) -> None:
        """Kill what is left of it (its group, and its cgroup's processes) and collect it."""
        if self.cgroup is not None:  # a judge that died mid-pause left the tree frozen: thawed, it can die
            self.cgroup.thaw()
        kill_group(self.proc)
        self.proc.wait()
        if self.cgroup is not None:
            self.cgroup.kill_all()
            self.cgroup.remove()


def spawn_module(module: str, args: list[str], *, cwd: Path, env: dict[str, str], max_file_bytes: int,
                 pass_fds: tuple[int, ...] = (), stdin_pipe: bool = False, niceness: int = 0,
                 die_with_parent: bool = True, sandbox: Policy | None = None, memory_cap: int | None = None,
                 pids_max: int = DEFAULT_PIDS_MAX) -> Child:
    """Start ``python -m module args`` and return at once; inside the sandbox ``sandbox`` describes when given (its
    tree's memory capped at ``memory_cap`` bytes and ``pids_max`` tasks by a cgroup). With ``stdin_pipe`` the parent
    can write to its stdin (a pre-started worker waits there for its job). ``niceness`` lowers its CPU priority (and
    its children's: compilers) below the evaluator's other processes."""
    out_path, err_path = cwd / f"{module}.stdout", cwd / f"{module}.stderr"
    argv = [sys.executable, "-m", module, *args]
    cgroup, seccomp, accounts = None, None, None
    if sandbox is not None:
        seccomp = filter_fd()
        accounts = account_files(sandbox.uid) if os.geteuid() == 0 else None  # else the uid is ours, with its entry
        argv = command(sandbox, argv, seccomp, accounts)
        pass_fds = (*pass_fds, seccomp, *(accounts or ()))
        cgroup = Cgroup.create(f"{os.getpid()}-{next(_names)}-{threading.get_ident() % 10**6}",
                               memory_cap or default_memory_limit(), pids_max)
    try:
        with out_path.open("wb") as out, err_path.open("wb") as err:  # the child keeps its own copies
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=out, stderr=err,
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL, start_new_session=True,
                pass_fds=pass_fds, preexec_fn=_preexec(max_file_bytes, niceness, die_with_parent,
                                                       tuple(cgroup.procs_files()) if cgroup else ()),
            )
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    finally:
        for fd in (seccomp, *(accounts or ())):
            if fd is not None:
                os.close(fd)
    return Child(proc, out_path, err_path, time.perf_counter(), cgroup)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
    return out


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and every descendant."""
    total, seen, stack = 0, set(), [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * page
        stack.extend(_children(p))
    return total


def default_memory_limit() -> int:
    """Half of the machine's memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def wait_child(child: Child, timeout_s: float, on_start=None, started: float | None = None,
               memory_cap: int | None = None) -> ChildResult:
    """Wait for ``child`` at most ``timeout_s`` from ``started`` (default: its start), then kill its
    whole tree, whatever it left running. ``on_start(proc, deadline)`` may read pipes. ``memory_cap``: where the
    child has no cgroup, stop the tree once its resident memory exceeds this many bytes (polled)."""
    proc = child.proc
    start = child.started if started is None else started
    timed_out = False
    exceeded = None
    poll = memory_cap if child.cgroup is None else None
    try:
        if on_start is not None:
            on_start(proc, start + timeout_s)
        deadline = start + timeout_s
        while True:
            left = deadline - time.perf_counter()
            try:
                proc.wait(timeout=max(0.01, min(0.2, left)) if poll else max(0.1, left))
                break
            except subprocess.TimeoutExpired:
                if time.perf_counter() >= deadline:
                    raise
                if poll and (rss := tree_rss(proc.pid)) > poll:
                    exceeded = rss
                    break
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if child.cgroup is not None and child.cgroup.oom_killed():
            exceeded = child.cgroup.peak_bytes() or memory_cap or 0
        child.end()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
    return ChildResult(
        returncode=None if timed_out else proc.returncode, timed_out=timed_out,
        seconds=time.perf_counter() - start, stdout_tail=tail(child.out_path), stderr_tail=tail(child.err_path),
        memory_exceeded=exceeded,
    )


def run_module(module: str, args: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
               max_file_bytes: int, pass_fds: tuple[int, ...] = (), on_start=None, niceness: int = 0,
               sandbox: Policy | None = None, memory_cap: int | None = None) -> ChildResult:
    """Run ``python -m module args`` (sandboxed as ``sandbox`` says); ``on_start(proc)`` may read pipes while it runs."""
    child = spawn_module(module, args, cwd=cwd, env=env, max_file_bytes=max_file_bytes, pass_fds=pass_fds,
                         niceness=niceness, sandbox=sandbox, memory_cap=memory_cap)
    return wait_child(child, timeout_s, on_start, memory_cap=memory_cap)
