"""``python -m harness.contain MODULE ARGS...``: run ``python -m MODULE ARGS`` so that it and every process
it starts end with it, and it cannot reach the evaluator.

Where the kernel allows (root, or user namespaces), MODULE runs as process 1 of a new pid namespace with
its own /proc: when it ends, the kernel kills everything left in the namespace (a ``setsid`` double fork
included); it sees no process outside (``getppid()`` is 0, other pids do not exist for ``kill``, /proc
lists only its own), so it can neither signal the evaluator nor read the judge's memory. A network
namespace without interfaces is added where asked. Elsewhere this process becomes a child subreaper:
orphans of MODULE's tree reparent here and are killed when MODULE ends. Either way MODULE dies with this
process (PR_SET_PDEATHSIG), and killing this process is reported as the candidate's runtime error.

``KV_CONTAINMENT`` tells MODULE which mode it got ("pidns" or "subreaper").
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _enter_namespaces(libc, want_net: bool) -> str:
    for flags in ([CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET] if want_net else []) + [CLONE_NEWPID | CLONE_NEWNS]:
        if libc.unshare(flags) == 0:
            return "pidns"
    if want_net:
        libc.unshare(CLONE_NEWNET)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    return "subreaper"


def _descendants(root: int) -> list[int]:
    """Processes whose parent is ``root`` (orphans reparented to this subreaper included)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == root:
                out.append(int(name))
    return out


def _reap_all(me: int) -> None:
    for _ in range(200):
        kids = _descendants(me)
        if not kids:
            return
        for pid in kids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass


def main(argv: list[str]) -> int:
    module, args = argv[0], argv[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    mode = _enter_namespaces(libc, os.environ.pop("KV_CONTAIN_NET", "") == "1")
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != me and mode != "pidns":
            os._exit(1)  # the container died between fork and prctl
        if mode == "pidns":
            libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
            libc.mount(b"proc", b"/proc", b"proc", 0, None)
        os.environ["KV_CONTAINMENT"] = mode
        os.execv(sys.executable, [sys.executable, "-m", module, *args])
    # Signals meant for the evaluation end it: pass them to the child.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        if got == pid:
            break
    if mode == "subreaper":
        _reap_all(me)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(me, sig)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
