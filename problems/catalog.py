"""The problem catalog: find, parse and load KernelBench-format problem files.

Layout of a problems directory (this package's own, or any ``--problems-dir``)::

    level1/19_ReLU.py          KernelBench-format source at size ``full``
    level1/metadata.toml       per problem: size presets, input domains, flags (optional)

An external directory (e.g. an older KernelBench checkout's ``KernelBench/``) needs only the
``levelN/*.py`` files; problems without metadata get no small preset and real-valued domains.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from .domains import Domain
from .source import render_at_size

BUILTIN_DIR = Path(__file__).resolve().parent
Size = Literal["small", "full"]
_FILE_RE = re.compile(r"^(\d+)_(.+)\.py$")
_ID_RE = re.compile(r"^(?:level)?(\d+)/(\d+)(?:_.*)?$")


class ProblemNotFound(LookupError):
    pass


class Flag(BaseModel):
    """A known property of a problem that affects how its results should be read."""

    kind: str = Field(description="degenerate | low_magnitude | training_mode | nondeterministic | ...")
    reason: str


class ProblemMeta(BaseModel):
    """Per-problem metadata kept beside the sources in ``metadata.toml``."""

    small: dict[str, Any] = Field(default_factory=dict, description="constant overrides for size 'small'")
    domains: dict[str, Domain] = Field(default_factory=dict, description="forward arg name -> input domain")
    flags: list[Flag] = Field(default_factory=list)
    tolerance: float | None = Field(default=None, description="verified-protocol fp32 tolerance override")
    borrowed_from: str | None = Field(
        default=None, description="an external file without metadata: the built-in problem (same level and name) "
        "whose domains, flags and tolerance it took")


class Problem(BaseModel):
    """One workload: where it lives and what we know about it. Sources are read lazily."""

    id: str = Field(description="'level1/19_ReLU'")
    level: int
    number: int
    name: str = Field(description="file stem, e.g. '19_ReLU'")
    path: Path
    meta: ProblemMeta = Field(default_factory=ProblemMeta)

    @property
    def short_id(self) -> str:
        return f"{self.level}/{self.number}"

    def full_source(self) -> str:
        return self.path.read_text()

    def reference_as_candidate(self, size: Size = "full") -> str:
        """The problem's own Model submitted as ModelNew: an honest candidate, for probes and benchmarks."""
        return self.source(size) + "\n\nclass ModelNew(Model):\n    pass\n"

    def has_size(self, size: Size) -> bool:
        return size == "full" or bool(self.meta.small)

    def source(self, size: Size = "full") -> str:
        """The KernelBench-format source at ``size`` (``small`` falls back to ``full`` if no preset)."""
        text = self.full_source()
        if size == "small":
            return render_at_size(text, self.meta.small)
        return text

    def domain(self, arg: str) -> Domain:
        return self.meta.domains.get(arg, Domain.REAL)

    def is_flagged(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.meta.flags)


def _read_metadata(level_dir: Path) -> dict[str, ProblemMeta]:
    path = level_dir / "metadata.toml"
    if not path.exists():
        return {}
    raw = tomllib.loads(path.read_text())
    return {name: ProblemMeta.model_validate(entry) for name, entry in raw.items()}


def _borrowed(meta: ProblemMeta | None, problem_id: str) -> ProblemMeta:
    """What an external problem file without metadata takes from the built-in problem of the same level and name:
    its input domains, flags and tolerance (properties of the operation: without them a KernelBench checkout's
    triangular-matrix product is fed full matrices, and every honest kernel that skips the zero half fails). Not its
    size presets: the external file's constants may differ."""
    if meta is None:
        return ProblemMeta()
    return ProblemMeta(domains=meta.domains, flags=meta.flags, tolerance=meta.tolerance, borrowed_from=problem_id)


@lru_cache(maxsize=16)
def _scan(root: Path) -> tuple[Problem, ...]:
    found: list[Problem] = []
    for level_dir in sorted(root.glob("level*")):
        m = re.fullmatch(r"level(\d+)", level_dir.name)
        if not m or not level_dir.is_dir():
            continue
        level = int(m.group(1))
        metas = _read_metadata(level_dir)
        builtin = {} if root == BUILTIN_DIR else _read_metadata(BUILTIN_DIR / level_dir.name)
        for path in level_dir.glob("*.py"):
            fm = _FILE_RE.match(path.name)
            if not fm:
                continue
            stem = path.stem
            found.append(
                Problem(
                    id=f"level{level}/{stem}",
                    level=level,
                    number=int(fm.group(1)),
                    name=stem,
                    path=path,
                    meta=metas.get(stem) or _borrowed(builtin.get(stem), f"level{level}/{stem}"),
                )
            )
    found.sort(key=lambda p: (p.level, p.number))
    return tuple(found)


def _root(problems_dir: str | Path | None) -> Path:
    root = Path(problems_dir).expanduser().resolve() if problems_dir else BUILTIN_DIR
    if not root.is_dir():
        raise ProblemNotFound(f"problems directory not found: {root}")
    # Accept a KernelBench checkout root as well as its KernelBench/ folder.
    if not any(root.glob("level*")) and (root / "KernelBench").is_dir():
        root = root / "KernelBench"
    return root


def list_problems(level: int | None = None, problems_dir: str | Path | None = None) -> list[Problem]:
    """All problems, optionally of one level, sorted by (level, number)."""
    items = _scan(_root(problems_dir))
    return [p for p in items if level is None or p.level == level]


def parse_id(problem_id: str) -> tuple[int, int | None, str | None]:
    """'level1/19_ReLU' -> (1, 19, '19_ReLU'); '1/19' -> (1, 19, None)."""
    text = problem_id.strip().removesuffix(".py")
    m = _ID_RE.match(text)
    if not m:
        raise ProblemNotFound(f"not a problem id: {problem_id!r} (use 'level1/19_ReLU' or '1/19')")
    level, number = int(m.group(1)), int(m.group(2))
    stem = text.split("/", 1)[1]
    return level, number, stem if "_" in stem else None


def load(problem_id: str, problems_dir: str | Path | None = None) -> Problem:
    """Look up one problem by 'level1/19_ReLU' or '1/19'."""
    level, number, stem = parse_id(problem_id)
    for p in list_problems(level, problems_dir):
        if p.number == number and (stem is None or p.name == stem):
            return p
    raise ProblemNotFound(f"no problem {problem_id!r} in {_root(problems_dir)}")


def select(
    ids: list[str] | None = None,
    levels: list[int] | None = None,
    problems_dir: str | Path | None = None,
) -> list[Problem]:
    """Problems by explicit ids, else by levels, else all."""
    if ids:
        return [load(i, problems_dir) for i in ids]
    allp = list_problems(problems_dir=problems_dir)
    return [p for p in allp if not levels or p.level in levels]
