"""Kernel sources for a stripped run, found by hash in a folder (``--sources DIR``).

A committed run keeps only each kernel's sha256 (benchmarks/strip_run.py drops the source; corpora are never
committed). The judge needs the source, so it is looked up where the corpus was laid out again
(benchmarks/corpora.py): every file under DIR is hashed as it is and as the sweep would have read it (a replay
recording goes through ``as_answer`` and ``extract_code``, so a bare kernel file and a raw response both match).
A hash match is the only way in: a file is never taken by its name alone, since the record was measured on exactly
the bytes behind its hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..extract import ExtractionError, extract_code
from ..models.replay import Key, as_answer, scan

_TEXT = {".py", ".txt", ".md"}  # what the replay client serves; other files are hashed as they are


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()  # agents.store.kernel_hash, harness source_hash


@dataclass(frozen=True)
class Found:
    source: str
    path: Path


class SourceIndex:
    """sha256 -> kernel source over every readable file under ``root``; ``recorded`` maps replay keys to files,
    so that a kernel not found can be told apart from one whose recording is there but changed."""

    def __init__(self, root: Path):
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"--sources {root}: not a directory")
        self.root = root
        self.by_hash: dict[str, Found] = {}
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue  # not a kernel source
            self.by_hash.setdefault(sha256(text), Found(text, path))
            if path.suffix in _TEXT:
                try:
                    code = extract_code(as_answer(path)).code
                except (ExtractionError, UnicodeDecodeError, OSError):
                    continue
                self.by_hash.setdefault(sha256(code), Found(code, path))
        self.recorded: dict[Key, Path] = scan(root)

    def __len__(self) -> int:
        return len(self.by_hash)

    def find(self, digest: str) -> Found | None:
        return self.by_hash.get(digest)

    def missing_note(self, digest: str, key: Key) -> str:
        """Why ``digest`` (the attempt at replay ``key``) is not here: its recording changed, or no file has it."""
        path = self.recorded.get(key)
        if path is not None:
            return (f"hash mismatch: {path} is this attempt's recording but neither its text nor the kernel extracted "
                    f"from it has the record's sha256 {digest[:16]}… (another version of the corpus?): not judged")
        return (f"kernel source not found: no file under {self.root} has the record's sha256 {digest[:16]}…: "
                "not judged")
