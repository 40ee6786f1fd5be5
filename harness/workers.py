"""Candidate processes (``harness.candidate.worker``), each sandboxed in a working folder of its own: started for
their job, or ahead of it (spares, ``settings.prespawns()``) so that the next candidate's process imports torch
while the current one runs."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple

from .children import Setup
from .sandbox import Child, Policy, default_memory_limit, spawn_module


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
        shutil.rmtree(self.slot.work, ignore_errors=True)


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
                shutil.rmtree(slot.work, ignore_errors=True)
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
