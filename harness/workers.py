"""Candidate processes (``harness.candidate.worker``), each sandboxed in a working folder of its own: started for
their job, or ahead of it (spares, ``settings.prespawns()``) so that the next candidate's process imports torch
while the current one runs; and the reports one sends the parent, read as they come."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

from .children import Setup
from .sandbox import Child, Policy, default_memory_limit, disk, spawn_module
from .wire import messages as M


class _Slot(NamedTuple):
    """A candidate process's working folder, its result pipe (read end, write end), its link to the judge (the
    candidate's end, the judge's end: the judge gets its end when the job starts) and its sandbox, whose extensions
    folder (``policy.ext``) receives a copy of the candidate's build when the job starts."""

    work: Path
    read_fd: int
    write_fd: int
    cand_sock: socket.socket
    judge_sock: socket.socket
    policy: Policy

    def close_fds(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.cand_sock.close()
        self.judge_sock.close()


class _Spare(NamedTuple):
    """A candidate process started ahead of its job, with its slot."""

    child: Child
    slot: _Slot

    def discard(self) -> None:
        self.child.end()
        with contextlib.suppress(OSError):
            if self.child.proc.stdin is not None:
                self.child.proc.stdin.close()
        self.slot.close_fds()
        disk.release(self.slot.work)


class Workers:
    """One Evaluator's candidate processes, fresh or pre-started."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.spares: list[_Spare] = []  # oldest (most likely ready) first
        self._lock = threading.Lock()

    def new_slot(self) -> _Slot:
        read_fd, write_fd = os.pipe()
        cand, judge = socket.socketpair()
        cand.set_inheritable(True)
        work = Path(tempfile.mkdtemp(prefix="cand-", dir=self.setup.tmp_root))
        disk.cap(work, self.setup.settings.sandbox_disk_bytes)  # the candidate's writes, its build's copy included
        (work / "kv-ext").mkdir()
        return _Slot(work, read_fd, write_fd, cand, judge, self.setup.policy(work, work / "kv-ext"))

    def memory_cap(self) -> int:
        return self.setup.settings.memory_limit_bytes or default_memory_limit()

    def spawn(self, slot: _Slot, mode: str) -> Child:
        """A sandboxed candidate process on ``slot``: it reads its job from stdin (``--job-on-stdin``), or imports
        torch and the harness first and then waits for it (``--spare``)."""
        # A pre-started one outlives the thread that started it (a pool thread may end first): it ends when its stdin
        # closes, which the kernel does when this process dies.
        spare = mode == "--spare"
        policy = dataclasses.replace(slot.policy, die_with_parent=not spare)
        return spawn_module("harness.candidate.worker", [mode], cwd=slot.work, sandbox=policy, memory_cap=self.memory_cap(),
                            env=self.setup.sandboxed_env(slot.work), die_with_parent=not spare,
                            max_file_bytes=self.setup.settings.max_output_file_bytes,
                            pass_fds=(slot.write_fd, slot.cand_sock.fileno()), stdin_pipe=True)

    def refill_spares(self) -> None:
        """Start workers that import torch and the harness, then wait on stdin for their jobs, until
        ``settings.spare_workers`` wait. More than one: a short evaluation (~4 s at full size) ends before one
        spare's imports do (~8 s on the H200 host), so with one the next candidate often waited for it anyway.
        Started from the measuring thread: a child's PR_SET_PDEATHSIG follows the thread that forked it."""
        while True:
            with self._lock:
                if len(self.spares) >= self.setup.settings.spare_workers:
                    return
            try:
                slot = self.new_slot()
            except OSError:  # the evaluator is closing: its temporary root is gone
                return
            try:
                child = self.spawn(slot, "--spare")
            except OSError:
                slot.close_fds()
                disk.release(slot.work)
                return
            spare = _Spare(child, slot)
            with self._lock:
                keep = len(self.spares) < self.setup.settings.spare_workers
                if keep:
                    self.spares.append(spare)
            if not keep:  # another thread refilled meanwhile
                spare.discard()
                return

    def take_spare(self) -> _Spare | None:
        while True:
            with self._lock:
                spare = self.spares.pop(0) if self.spares else None
            if spare is None:
                return None
            if spare.child.proc.poll() is None:
                return spare
            spare.discard()  # died while waiting (killed, or its thread ended): the next one, if any

    def discard_spares(self) -> None:
        with self._lock:
            spares, self.spares = self.spares, []
        for spare in spares:
            spare.discard()


MAX_REPORT_BYTES = 64 * 2**20  # one report line from a candidate process (timing samples are the longest)


def read_reports(slot: _Slot, nonce: str, messages: list[dict], breaches: list[str]) -> None:
    """Read the reports of the candidate process started on ``slot`` until its result pipe closes (on a thread of
    its own while it runs): each line of its job's ``nonce``, validated on arrival, into ``messages`` with the parent's
    clock at arrival; each report the worker never sends into ``breaches``."""
    os.close(slot.write_fd)
    slot.cand_sock.close()  # only the candidate process holds its end now: its death is the judge's EOF
    buf, skipping = b"", False
    with os.fdopen(slot.read_fd, "rb", buffering=0) as f:
        while True:
            chunk = f.read(65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > MAX_REPORT_BYTES and b"\n" not in buf:  # one line past the bound: dropped whole
                breaches.append(f"a report line over {MAX_REPORT_BYTES} bytes")
                buf, skipping = b"", True
                continue
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if skipping:  # the tail of a dropped line
                    skipping = False
                    continue
                try:
                    msg = json.loads(line)
                except (ValueError, RecursionError):  # not JSON, too deep, a number too long to parse
                    continue
                if isinstance(msg, dict) and msg.get("nonce") == nonce:
                    # validated on arrival: a report the worker never sends is a breach, not a crash here
                    try:
                        payload = M.report(msg.get("kind"), msg.get("payload"))
                    except M.ProtocolBreach as exc:
                        breaches.append(str(exc))
                        continue
                    messages.append({"kind": msg["kind"], "payload": payload,
                                     "received_at": time.perf_counter()})  # parent clock: phase durations
