"""One-line reasons from an evaluation's error text: what the user needs first, never cut mid-word.

A candidate that fails to import leaves a traceback whose head is the harness's own frames (worker.py,
candidate.py); the reason shows the exception's first line (e.g. ``SyntaxError: expected ':'``; a message of several
lines, like TorchScript's, says what went wrong first and its details after) and where in the candidate it happened,
plus the first compiler error of a failed build.
"""

from __future__ import annotations

import re

# harness.candidate.load.import_candidate writes the source as candidate_<12 hex>.py
_CANDIDATE_FRAME = re.compile(r'^\s*File "[^"]*candidate_[0-9a-f]{12}\.py", line (\d+)')
_COMPILER_ERROR = re.compile(r"^\S+:\d+:(?:\d+:)? (?:fatal )?error: .*$", re.M)
_FRAME = re.compile(r'^\s+File "')
# "RuntimeError: ...", "torch.OutOfMemoryError: ...", "KeyboardInterrupt": a Python exception's class by the usual
# name endings (a compiler's or ninja's "FAILED:"/"error:" line, or a message's "Position: 5", is not one)
_EXCEPTION_HEAD = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration)(?::|$)")


def clip(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at a word boundary with an ellipsis when too long."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def error_summary(error: str | None, limit: int = 300) -> str:
    """The reason an error text gives, as one line of at most ``limit`` characters."""
    text = (error or "").strip()
    if "Traceback (most recent call last)" not in text:
        return clip(" ".join(text.split()), limit)
    lines = text.splitlines()
    last_frame = max((i for i, ln in enumerate(lines) if _FRAME.match(ln)), default=-1)
    exc = next((ln.strip() for ln in lines[last_frame + 1:] if _EXCEPTION_HEAD.match(ln)), "") or \
        next((ln.strip() for ln in reversed(lines) if ln.strip() and not ln[0].isspace()), "")
    parts = [exc]
    for i in range(len(lines) - 1, -1, -1):  # the innermost frame in the candidate's own source
        m = _CANDIDATE_FRAME.match(lines[i])
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _CANDIDATE_FRAME.match(lines[i + 1]) else ""
            parts.append(f"at candidate line {m.group(1)}" + (f": {code}" if code and code != exc else ""))
            break
    compiler = _COMPILER_ERROR.search(text)
    if compiler:
        parts.append(f"first compiler error: {compiler.group(0).strip()}")
    return clip("; ".join(p for p in parts if p), limit)
