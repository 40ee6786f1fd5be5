"""Starting a child process that cannot take the evaluator down with it.

Enforced: its own process group (killed as a whole on timeout), a wall-clock limit, a cap on file
size (stdout spam, disk filling), a private working directory, stdout/stderr to files that are never
parsed, and a network namespace without interfaces where the kernel allows it (root or user
namespaces). Candidate processes also run contained (``harness.contain``: a pid namespace of their own,
or a subreaper) under a host-memory cap on their whole process tree. Not enforced: read access to the
filesystem, writes outside the working directory by path.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNET = 0x40000000


def _try_unshare_network() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except Exception:  # noqa: BLE001
        return False


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """The child runs in its own session (so it can be killed as a group); without this, a sweep killed
    with SIGKILL would leave its builds and evaluations running as orphans. Linux only; best effort.
    (The signal follows the thread that started the child, which waits on it until it ends.)"""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def _preexec(max_file_bytes: int, isolate_network: bool, niceness: int = 0, die_with_parent: bool = True,
             read_only: tuple[list[str], list[str]] | None = None):
    def run() -> None:
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
        if isolate_network:
            _try_unshare_network()
        if read_only is not None:
            _read_only_view(*read_only)
    return run


def _read_only_view(read_only: list[str], writable: list[str]) -> None:
    """A mount namespace of its own (no pid namespace: a detached PCH maker must outlive a build) in which
    ``read_only`` folders are read-only but for ``writable`` ones (``harness.mounts``). Without the privilege
    for it (not root) the folders stay as they are."""
    from .mounts import drop_mount_capability, private_namespace, protect

    if private_namespace():
        protect(read_only, writable)
        drop_mount_capability()  # or the candidate's import-time code could remount them writable


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


def tail(path: Path, nbytes: int = 4000) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - nbytes))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


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
    """A sandboxed child that is running (``spawn_module``); ``wait_child`` collects it."""

    proc: subprocess.Popen
    out_path: Path
    err_path: Path
    started: float


def spawn_module(module: str, args: list[str], *, cwd: Path, env: dict[str, str], max_file_bytes: int,
                 isolate_network: bool = True, pass_fds: tuple[int, ...] = (), stdin_pipe: bool = False,
                 niceness: int = 0, contain: bool = False, die_with_parent: bool = True,
                 read_only: tuple[list[str], list[str]] | None = None) -> Child:
    """Start ``python -m module args`` sandboxed and return at once. With ``stdin_pipe`` the parent
    can write to its stdin (a pre-started worker waits there for its job). ``niceness`` lowers its
    CPU priority (and its children's: compilers) below the evaluator's other processes. ``contain``
    runs it through ``harness.contain`` (candidate code: its descendants end with it, it cannot reach
    this process). ``read_only``: (folders, the writable ones under them) for a process that runs candidate
    code uncontained (a build imports the candidate)."""
    out_path, err_path = cwd / f"{module}.stdout", cwd / f"{module}.stderr"
    argv = [sys.executable, "-m", module, *args]
    if contain:
        argv = [sys.executable, "-m", "harness.contain", module, *args]
        env = {**env, "KV_CONTAIN_NET": "1" if isolate_network else ""}
        isolate_network = False  # the container makes the network namespace with the others
    with out_path.open("wb") as out, err_path.open("wb") as err:  # the child keeps its own copies
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=out, stderr=err,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL, start_new_session=True,
            pass_fds=pass_fds, preexec_fn=_preexec(max_file_bytes, isolate_network, niceness, die_with_parent,
                                                   read_only),
        )
    return Child(proc, out_path, err_path, time.perf_counter())


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
    """Resident bytes of ``pid`` and every descendant (orphans re-parented inside a contained tree included)."""
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
    whole process group, whatever it left running. ``on_start(proc, deadline)`` may read pipes.
    ``memory_cap``: stop the tree once its resident memory exceeds this many bytes."""
    proc = child.proc
    start = child.started if started is None else started
    timed_out = False
    exceeded = None
    try:
        if on_start is not None:
            on_start(proc, start + timeout_s)
        deadline = start + timeout_s
        while True:
            left = deadline - time.perf_counter()
            try:
                proc.wait(timeout=max(0.01, min(0.2, left)) if memory_cap else max(0.1, left))
                break
            except subprocess.TimeoutExpired:
                if time.perf_counter() >= deadline:
                    raise
                if memory_cap and (rss := tree_rss(proc.pid)) > memory_cap:
                    exceeded = rss
                    break
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        kill_group(proc)  # also reaps anything it forked into its group
        proc.wait()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
    return ChildResult(
        returncode=None if timed_out else proc.returncode, timed_out=timed_out,
        seconds=time.perf_counter() - start, stdout_tail=tail(child.out_path), stderr_tail=tail(child.err_path),
        memory_exceeded=exceeded,
    )


def run_module(module: str, args: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
               max_file_bytes: int, isolate_network: bool = True, pass_fds: tuple[int, ...] = (),
               on_start=None, niceness: int = 0, contain: bool = False, memory_cap: int | None = None,
               read_only: tuple[list[str], list[str]] | None = None) -> ChildResult:
    """Run ``python -m module args`` sandboxed; ``on_start(proc)`` may read pipes while it runs."""
    child = spawn_module(module, args, cwd=cwd, env=env, max_file_bytes=max_file_bytes,
                         isolate_network=isolate_network, pass_fds=pass_fds, niceness=niceness, contain=contain,
                         read_only=read_only)
    return wait_child(child, timeout_s, on_start, memory_cap=memory_cap)
