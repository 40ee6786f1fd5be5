"""An Evaluator's setup, shared by its parts (builds, judges, candidate processes), and what every process they
start is given from it: an environment without the parent's credentials and, for a process that runs candidate code
(a build, a candidate's worker, the judge's clock peer), a sandbox of its own."""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from pathlib import Path

import problems as P

from .build.build import OBJECTS_ENV, build_env
from .builds import pch_dir
from .sandbox import EXT_MOUNT, UID_BASE, UID_COUNT, Policy, own
from .wire.job import EvalSettings, JobSpec


@dataclasses.dataclass
class Setup:
    """What an Evaluator was made with. Its parts read it at each use, so a field the evaluator replaces
    (``harness.eval.bounded_evaluate`` replaces ``settings`` between steps) reaches all of them."""

    device: str
    size: P.Size
    gpu_index: int | None
    settings: EvalSettings
    cache_dir: Path
    problems_dir: str | Path | None
    tmp_root: Path  # the evaluator's temporary root: reference outputs and every process's work folder

    def problem(self, problem_id: str) -> P.Problem:
        return P.load(problem_id, self.problems_dir)

    def base_job(self, problem: P.Problem) -> JobSpec:
        """What every process of this problem is told; seeds are added for the judge alone."""
        return JobSpec(problem_id=problem.id, problem_source=problem.source(self.size), size=self.size,
                       device=self.device, domains={k: str(v) for k, v in problem.meta.domains.items()},
                       settings=self.settings)

    def policy(self, work: Path, ext: Path | None = None, writable: tuple[Path, ...] = ()) -> Policy:
        """The sandbox of a process that runs candidate code (or a compiler on a candidate's flags): ``work`` and
        ``ext`` writable and given to its uid; this evaluator's temporary root (the judge's and every other
        candidate's folders) and the extensions cache (every other source's build) out of sight; the PCH folder
        and compiler shims readable."""
        uid = _sandbox_uid()
        for d in (work, ext, *writable):
            if d is not None:
                own(d, uid)
        pch = pch_dir()
        if pch is not None:
            pch.mkdir(parents=True, exist_ok=True)
        return Policy(work=work, uid=uid, ext=ext, writable=writable, gpu=self.device != "cpu",
                      hide=(self.tmp_root, self.cache_dir / "extensions"), needed=(pch,) if pch else (),
                      tmp_bytes=self.settings.sandbox_tmp_bytes, shm_bytes=self.settings.sandbox_tmp_bytes)

    def sandboxed_env(self, work: Path) -> dict[str, str]:
        """A sandboxed child's environment: its extensions folder where every sandbox has it, its home (compiler and
        driver caches) in its own folder."""
        env = _child_env(EXT_MOUNT, self.device, self.gpu_index)
        env.pop(OBJECTS_ENV, None)  # a shared object cache is never a candidate's (object_cache_dir)
        env.update(HOME=str(work), TMPDIR="/tmp", TRITON_CACHE_DIR=str(work / ".triton"))
        return env


# Variables that may hold credentials (a sweep's API keys): never in a child's environment, where a candidate could
# print them into its record.
_SECRET_VAR = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|COOKIE|AUTH|^AWS_|^GOOGLE_|^AZURE_|^HF_", re.I)


def _child_env(ext_dir: Path | str, device: str, gpu_index: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _SECRET_VAR.search(k)}
    if gpu_index is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)  # the child sees one GPU, as cuda:0
    env["TORCH_EXTENSIONS_DIR"] = str(ext_dir)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The harness and problems packages must be importable from the child's private cwd.
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    # Same compilers (shims through the compile launcher) for the build and the candidate's own
    # load_inline: a command that differs between them would make the candidate rebuild.
    env.update(build_env(pch_dir(), None))
    return env


_uid_seq = itertools.count()


def _sandbox_uid() -> int:
    """A uid for the next sandbox, from the pool, spread by process so that two evaluators rarely share one (sharing
    would grant nothing: every sandbox has its own pid namespace and sees only its own folders)."""
    return UID_BASE + (os.getpid() * 7919 + next(_uid_seq)) % UID_COUNT
