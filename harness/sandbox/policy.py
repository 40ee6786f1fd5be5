"""What candidate code may see and touch, written as a bubblewrap (``bwrap``) command line.

Every process that runs candidate code (the build, which imports it, and the evaluation) starts through
``command(policy, argv)``:

* namespaces (bubblewrap): its own pid namespace with its own /proc (no other process can be seen, signalled or
  traced; when its first process ends the kernel kills the rest), mount, ipc, uts, cgroup and network (no interface
  but loopback) namespaces;
* identity: run by root, bubblewrap makes the namespaces and mounts with root's privileges, then ``setpriv`` (util-
  linux) switches to ``policy.uid``, an unprivileged uid of a pool no other process uses, with every capability,
  the bounding set and the inheritable set cleared and no_new_privs set. Run by another user, bubblewrap adds a user
  namespace and drops every capability itself; the uid is then the evaluator's own;
* files: the host's root read-only (and files only root may read stay unreadable to that uid); private, size-capped
  tmpfs on /tmp and /dev/shm (charged to the sandbox's memory cgroup, gone with it); ``policy.hide`` folders replaced
  by empty tmpfs (the evaluator's temporary root: other candidates' folders and the judge's; the extensions cache:
  other sources' builds); writable only ``policy.work`` and, at ``EXT_MOUNT``, ``policy.ext``;
* identity files: /etc/passwd and /etc/group are the host's plus an entry for the pool uid (``account_files``), so a
  library that asks who runs it (``getpass.getuser()``: torch.compile's cache folder) gets an answer, not KeyError;
* devices: /dev holds only null, zero, full, random, urandom, tty and pts, plus the NVIDIA nodes on a GPU;
* system calls: ``harness.sandbox.seccomp``'s filter.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

# Where a candidate's extensions folder is inside its build and its evaluation alike: torch writes absolute paths
# into build.ninja, and the same path at both ends lets the evaluation load the build instead of rebuilding.
EXT_MOUNT = "/tmp/kv-ext"
# Sandboxed processes run as uids from this range (one per concurrent sandbox); no account owns them.
UID_BASE = 61000
UID_COUNT = 2000


class SandboxUnavailable(RuntimeError):
    """bubblewrap (or setpriv, when run as root) is not installed: candidate code is not run at all."""


@dataclass(frozen=True)
class Policy:
    work: Path  # writable, at its own path, the working directory
    uid: int
    ext: Path | None = None  # writable, at EXT_MOUNT
    writable: tuple[Path, ...] = ()  # more writable folders at their own paths (a PCH being made)
    hide: tuple[Path, ...] = ()  # replaced by empty folders
    gpu: bool = False
    tmp_bytes: int = 2 * 2**30
    shm_bytes: int = 2 * 2**30
    needed: tuple[Path, ...] = field(default_factory=tuple)  # read-only, visible even under hidden folders
    die_with_parent: bool = True  # killed when the thread that started it ends (a pre-started worker is not)


@functools.lru_cache(maxsize=1)
def tools() -> tuple[str, str | None]:
    """(bwrap, setpriv) paths; setpriv is needed only when this process is root."""
    bwrap = shutil.which("bwrap")
    setpriv = shutil.which("setpriv")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed; candidate code runs only inside it "
                                 "(Debian/Ubuntu: apt-get install bubblewrap)")
    if os.geteuid() == 0 and setpriv is None:
        raise SandboxUnavailable("setpriv (util-linux) is not installed: a sandbox started by root cannot drop to "
                                 "an unprivileged uid without it")
    return bwrap, setpriv


@functools.lru_cache(maxsize=1)
def runtime_paths() -> tuple[Path, ...]:
    """What every sandboxed Python needs to read: the interpreter and its prefixes, the project, torch, the CUDA
    toolkit's compiler, and the entries of PYTHONPATH."""
    out = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(os.path.realpath(sys.executable)).parent,
           Path(__file__).resolve().parents[2]}
    spec = find_spec("torch")
    if spec is not None and spec.origin:
        out.add(Path(spec.origin).resolve().parents[1])
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            out.add(Path(os.environ[var]))
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            out.add(Path(entry))
    return tuple(sorted(p for p in out if p.exists()))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _closed_ancestor(path: Path) -> Path | None:
    """The highest folder on ``path``'s way down that other users may not enter (mode without o+x), if any."""
    for anc in [*reversed(path.parents), path][1:]:
        try:
            if not os.stat(anc).st_mode & stat.S_IXOTH:
                return anc
        except OSError:
            return None
    return None


def gpu_devices() -> list[str]:
    return [d for d in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                        *sorted(glob.glob("/dev/nvidia[0-9]*"))) if os.path.exists(d)]


ACCOUNT = "kv-sandbox"  # the name the sandbox's /etc/passwd and /etc/group give the pool uid


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def account_files(uid: int) -> tuple[int, int]:
    """Readable descriptors (the caller closes them) of the sandbox's /etc/passwd and /etc/group: the host's, plus
    the pool uid's entry, which no host file has (an unknown uid made torch.compile raise `getpwuid(): uid not found`
    in a candidate's constructor: a harness failure recorded as the candidate's runtime_error, H200 2026-12-05)."""
    def host(path: str) -> bytes:
        try:
            text = Path(path).read_bytes()
        except OSError:
            text = b""
        return text if not text or text.endswith(b"\n") else text + b"\n"
    passwd = host("/etc/passwd") + f"{ACCOUNT}:x:{uid}:{uid}:candidate code:/tmp:/usr/sbin/nologin\n".encode()
    group = host("/etc/group") + f"{ACCOUNT}:x:{uid}:\n".encode()
    return _memfd("passwd", passwd), _memfd("group", group)


def command(policy: Policy, argv: list[str], seccomp_fd: int, account_fds: tuple[int, int] | None = None) -> list[str]:
    """bwrap's command line for ``argv`` under ``policy``; ``account_fds``: account_files' descriptors (run by root)."""
    bwrap, setpriv = tools()
    root = os.geteuid() == 0
    # No --new-session: the launcher already starts bwrap in a session of its own with no controlling terminal (so
    # no TIOCSTI), and a second setsid here would leave the sandbox in a fresh autogroup at nice 0 (build niceness).
    a = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
         *(["--die-with-parent"] if policy.die_with_parent else [])]
    if not root:
        a += ["--unshare-user", "--disable-userns"]
    a += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if policy.gpu:
        for d in gpu_devices():
            a += ["--dev-bind", d, d]
    a += ["--perms", "1777", "--size", str(policy.tmp_bytes), "--tmpfs", "/tmp",
          "--perms", "1777", "--size", str(policy.shm_bytes), "--tmpfs", "/dev/shm"]
    covered = [Path("/tmp"), Path("/dev/shm")]
    for h in policy.hide:
        if h.is_dir() and not any(_under(h, c) for c in covered):
            a += ["--tmpfs", str(h)]
            covered.append(h)
    needed = [*runtime_paths(), *policy.needed]
    if root:  # the dropped uid cannot enter a folder closed to others (root's home): open an empty one in its place
        for p in needed:
            anc = _closed_ancestor(p)
            if anc is not None and not any(_under(anc, c) for c in covered):
                a += ["--perms", "0755", "--tmpfs", str(anc)]
                covered.append(anc)
    needed = [p for p in needed if not any(_under(p, q) and p != q for q in needed)]  # the outermost of nested ones
    made: set[Path] = set()

    def way_down(p: Path) -> list[str]:
        """Folders bubblewrap would make on the way to ``p`` under a replaced folder, made enterable (not listable)."""
        out = []
        for anc in reversed(p.parents):
            if anc not in made and any(_under(anc, c) and anc != c for c in covered):
                made.add(anc)
                out += ["--perms", "0711", "--dir", str(anc)]
        return out

    for p in needed:  # what lies under a replaced folder is put back, read-only
        if p.exists() and any(_under(p, c) and p != c for c in covered):
            a += [*way_down(p), "--ro-bind", str(p), str(p)]
    for w in (policy.work, *policy.writable):
        a += way_down(w)
    a += ["--bind", str(policy.work), str(policy.work)]
    if policy.ext is not None:
        a += ["--bind", str(policy.ext), EXT_MOUNT]
    for w in policy.writable:
        a += ["--bind", str(w), str(w)]
    if account_fds is not None:
        a += ["--perms", "0644", "--ro-bind-data", str(account_fds[0]), "/etc/passwd",
              "--perms", "0644", "--ro-bind-data", str(account_fds[1]), "/etc/group"]
    a += ["--chdir", str(policy.work), "--seccomp", str(seccomp_fd)]
    if root:
        a += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP", "--",
              setpriv, f"--reuid={policy.uid}", f"--regid={policy.uid}", "--clear-groups", "--inh-caps=-all",
              "--bounding-set=-all", "--no-new-privs", "--"]
    else:
        a += ["--cap-drop", "ALL", "--"]
    return a + argv


def own(path: Path, uid: int) -> None:
    """Give ``path`` and everything under it to ``uid`` (its writable folders), when this process may."""
    if os.geteuid() != 0:
        return
    os.chown(path, uid, uid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, uid)
