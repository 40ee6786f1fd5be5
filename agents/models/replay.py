"""replay:<path> serves recorded answers as if a model wrote them.

Recognised file names anywhere under the directory:

    level_1_problem_19_sample_0_kernel.py           KernelBench generations (scripts/generate_samples.py)
    level_1_problem_19_sample_0_turn_2.txt / .md    raw responses, one per turn
    level1/19_ReLU.py  (or 1/19_*.py)               one kernel per problem

A name without a sample is sample 0; without a turn, turn 1. A .py file is a bare kernel and is
served wrapped in a ```python fence, so extraction works the same on every source. A missing
recording is a Completion with finish="error", never an exception: one gap must not stop a sweep.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from .base import Completion, ModelRequest, Usage
from .errors import ProviderError

Key = tuple[int, int, int, int]  # level, number, sample, turn
log = logging.getLogger(__name__)

_FLAT = re.compile(
    r"^level_(?P<level>\d+)_problem_(?P<number>\d+)(?:_sample_(?P<sample>\d+))?(?:_turn_(?P<turn>\d+))?"
    r"(?:_(?:kernel|response|raw))?\.(?P<ext>py|txt|md)$"
)
_NESTED_DIR = re.compile(r"^(?:level_?)?(?P<level>\d+)$")
_NESTED_FILE = re.compile(r"^(?P<number>\d+)_.*\.(?P<ext>py|txt|md)$")


def _key_of(path: Path) -> Key | None:
    if m := _FLAT.match(path.name):
        return (int(m["level"]), int(m["number"]), int(m["sample"] or 0), int(m["turn"] or 1))
    if (d := _NESTED_DIR.match(path.parent.name)) and (f := _NESTED_FILE.match(path.name)):
        return (int(d["level"]), int(f["number"]), 0, 1)
    return None


def scan(root: Path) -> dict[Key, Path]:
    """Map every recognised recording under ``root`` to its key; the first file (sorted) wins a tie."""
    if not root.is_dir():
        raise ProviderError(f"replay: {root} is not a directory of recorded kernels or responses")
    index: dict[Key, Path] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        key = _key_of(path)
        if key is None:
            continue
        if key in index:
            log.warning("replay: %s and %s are both level %d problem %d sample %d turn %d; using the first",
                        index[key], path, *key)
            continue
        index[key] = path
    return index


def replay_inventory(path: str | Path) -> list[tuple[int, int, int]]:
    """The (level, number, sample) triples recorded under ``path``, sorted: what a sweep should evaluate."""
    return sorted({key[:3] for key in scan(Path(path))})


def as_answer(path: Path) -> str:
    text = path.read_text()
    if path.suffix == ".py":
        return f"```python\n{text.rstrip()}\n```\n"
    return text


class ReplayClient:
    provider = "replay"

    def __init__(self, root: Path, spec: str | None = None):
        self.root = Path(root)
        self.spec = spec or f"replay:{root}"
        self.model = f"replay:{self.root.name}"
        self.index = scan(self.root)

    def _missing(self, level: int, number: int, sample: int, turn: int) -> str:
        samples = sorted({k[2] for k in self.index if k[:2] == (level, number)})
        turns = sorted(k[3] for k in self.index if k[:3] == (level, number, sample))
        if not samples:
            return f"replay: nothing recorded for level {level} problem {number} under {self.root}"
        if not turns:
            return f"replay: level {level} problem {number} has no sample {sample} (recorded samples: {samples})"
        return f"replay: level {level} problem {number} sample {sample} has no turn {turn} (recorded turns: {turns})"

    async def complete(self, request: ModelRequest) -> Completion:
        c = request.context
        path = self.index.get((c.level, c.number, c.sample, c.turn))
        if path is None:
            error = self._missing(c.level, c.number, c.sample, c.turn)
            return Completion(text="", finish="error", error=error, cost_usd=0.0, model=self.model,
                              provider=self.provider)
        try:
            text = as_answer(path)
        except (UnicodeDecodeError, OSError) as exc:
            # A corrupt recording is that turn's error, never the sweep's crash (and never silently repaired:
            # replacing bytes could change what the kernel does).
            return Completion(text="", finish="error", error=f"replay: cannot read {path}: {exc}", cost_usd=0.0,
                              model=self.model, provider=self.provider)
        return Completion(
            text=text,
            finish="stop",
            usage=Usage(output_tokens=len(text) // 4),  # a rough count; nothing was generated or paid
            cost_usd=0.0,
            model=self.model,
            provider=self.provider,
            request_id=str(path.relative_to(self.root)),
        )

    async def aclose(self) -> None:
        return None
