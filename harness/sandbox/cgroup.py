"""A kernel-enforced memory and process limit for one sandbox's whole process tree (cgroup v2, or v1's memory and
pids controllers), and the freezer the judge pauses that tree with while it works between timed calls.

The memory limit counts what the tree's processes map and the shared memory and page cache they dirty (a file in the
sandbox's ``/dev/shm`` or ``/tmp`` tmpfs included), so nothing a candidate allocates escapes it; swap is not allowed
past it. The pids limit bounds threads and processes together (a fork bomb ends at it). ``Cgroup.create`` returns
None where the hierarchy is not writable (an unprivileged evaluator): the launcher then falls back to polling the
tree's resident memory, and the record of the evaluation says which one held.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
GROUP = "kernelverify"


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _read_int(path: Path, key: str | None = None) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    if key is None:
        text = text.strip()
        return int(text) if text.isdigit() else None
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == key and v.strip().isdigit():
            return int(v)
    return None


# v1: the controllers a sandbox's cgroup needs, and those it takes where the hierarchy has them (the judge's pauses
# and its reading of the tree's CPU time).
V1_REQUIRED, V1_OPTIONAL = ("memory", "pids"), ("freezer", "cpuacct")
# What freezes and thaws a cgroup, written to its control file (freeze_files' first): v1's freezer.state, v2's
# cgroup.freeze. The judge writes them through its descriptors (harness.judge.pause keeps its own copy: it may not import
# the launcher; tests/test_pause.py holds the two equal), the evaluator by path (thaw).
FREEZER_WRITES = {"v1": (b"FROZEN", b"THAWED"), "v2": (b"1", b"0")}
_swept = False


def _group_dirs() -> list[Path]:
    """The folders under which sandboxes' cgroups are made (one per v1 controller, one on v2)."""
    if (ROOT / "cgroup.controllers").exists():
        return [ROOT / GROUP]
    return [ROOT / ctl / GROUP for ctl in (*V1_REQUIRED, *V1_OPTIONAL)]


def sweep_stale() -> int:
    """Remove the empty cgroups of evaluators that are gone (a name starts with its maker's pid; an evaluator killed
    outright never removes its own). A live maker's, or one with a process left in it, stays. Returns how many went."""
    removed = 0
    for parent in _group_dirs():
        with contextlib.suppress(OSError):
            for d in parent.iterdir():
                maker = d.name.split("-", 1)[0]
                if not d.is_dir() or not maker.isdigit() or Path(f"/proc/{maker}").exists():
                    continue
                with contextlib.suppress(OSError):
                    if (d / "cgroup.procs").read_text().strip():
                        continue
                    d.rmdir()
                    removed += 1
    return removed


class Cgroup:
    """One sandbox's cgroup (one folder per controller on v1, one on v2)."""

    def __init__(self, dirs: dict[str, Path], v2: bool) -> None:
        self.dirs, self.v2 = dirs, v2

    @classmethod
    def create(cls, name: str, memory_bytes: int, pids_max: int) -> Cgroup | None:
        global _swept
        if not _swept:  # once per process: what evaluators that were killed outright left behind
            _swept = True
            sweep_stale()
        if (ROOT / "cgroup.controllers").exists():
            parent = ROOT / GROUP
            with contextlib.suppress(OSError):
                parent.mkdir(exist_ok=True)
            _write(parent / "cgroup.subtree_control", "+memory +pids")
            d = parent / name
            try:
                d.mkdir()
            except OSError:
                return None
            ok = _write(d / "memory.max", str(memory_bytes)) and _write(d / "pids.max", str(pids_max))
            _write(d / "memory.swap.max", "0")
            cg = cls({"memory": d, "pids": d}, True)
        else:
            dirs = {}
            for ctl in V1_REQUIRED:
                d = ROOT / ctl / GROUP / name
                try:
                    d.mkdir(parents=True)
                except OSError:
                    break
                dirs[ctl] = d
            ok = len(dirs) == len(V1_REQUIRED)
            for ctl in V1_OPTIONAL if ok else ():  # the judge's pauses and CPU reading, where the hierarchy has them
                if (ROOT / ctl).is_dir():
                    with contextlib.suppress(OSError):
                        (ROOT / ctl / GROUP / name).mkdir(parents=True)
                        dirs[ctl] = ROOT / ctl / GROUP / name
            cg = cls(dirs, False)
            ok = ok and _write(dirs["memory"] / "memory.limit_in_bytes", str(memory_bytes)) \
                and _write(dirs["pids"] / "pids.max", str(pids_max))
            if ok:  # swap counted with memory where the kernel accounts it
                _write(dirs["memory"] / "memory.memsw.limit_in_bytes", str(memory_bytes))
        if not ok:
            cg.remove()
            return None
        return cg

    def procs_files(self) -> list[str]:
        """The files a new process writes its pid into (in the child, before it execs the sandbox)."""
        return [str(d / "cgroup.procs") for d in {str(d): d for d in self.dirs.values()}.values()]

    def freeze_files(self) -> tuple[str, list[Path]] | None:
        """What pauses the whole tree (the kernel's cgroup freezer: no task of it runs until thawed), for the judge:
        ("v2", [cgroup.freeze, cgroup.events]) or ("v1", [freezer.state]); None where this cgroup has no freezer."""
        if self.v2:
            d = self.dirs["memory"]
            return ("v2", [d / "cgroup.freeze", d / "cgroup.events"]) if (d / "cgroup.freeze").exists() else None
        d = self.dirs.get("freezer")
        return ("v1", [d / "freezer.state"]) if d is not None and (d / "freezer.state").exists() else None

    def cpu_usage_file(self) -> tuple[str, Path] | None:
        """The file that counts the CPU time of every task of the tree, for the judge: ("v2", cpu.stat: usage_usec)
        or ("v1", cpuacct.usage: ns); None where this cgroup has neither."""
        if self.v2:
            f = self.dirs["memory"] / "cpu.stat"
            return ("v2", f) if f.exists() else None
        d = self.dirs.get("cpuacct")
        return ("v1", d / "cpuacct.usage") if d is not None and (d / "cpuacct.usage").exists() else None

    def peak_bytes(self) -> int | None:
        d = self.dirs["memory"]
        return _read_int(d / "memory.peak") if self.v2 else _read_int(d / "memory.max_usage_in_bytes")

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the tree for exceeding the memory limit."""
        d = self.dirs["memory"]
        events = d / ("memory.events" if self.v2 else "memory.oom_control")
        return bool(_read_int(events, "oom_kill"))

    def pids(self) -> list[int]:
        out: set[int] = set()
        for f in self.procs_files():
            with contextlib.suppress(OSError, ValueError):
                out.update(int(x) for x in Path(f).read_text().split())
        return sorted(out)

    def kill_all(self) -> None:
        """SIGKILL whatever is left (the pid namespace already ended the sandbox's tree; this is the second lock)."""
        self.thaw()
        if self.v2 and _write(self.dirs["pids"] / "cgroup.kill", "1"):
            return
        for _ in range(50):
            left = self.pids()
            if not left:
                return
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def thaw(self) -> None:
        """Undo a pause the judge left (it ended mid-pause): a frozen task cannot die, nor its folder go."""
        if (files := self.freeze_files()) is not None:
            kind, paths = files
            _write(paths[0], FREEZER_WRITES[kind][1].decode())

    def remove(self) -> None:
        self.thaw()
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still being torn down
                    time.sleep(0.01)
