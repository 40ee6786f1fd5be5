"""Pull the candidate source out of a model's answer.

The harness wants one Python source that defines ``class ModelNew``. Answers come with prose,
several fenced blocks (a plan, the CUDA in its own ```cuda block, the final Python), or no
fences at all. ExtractionError messages are written to be sent back to the model as feedback.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from pydantic import BaseModel, Field

from .backends import BACKENDS, Backend

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n", re.MULTILINE)
_PY_LANGS = {"python", "py", "python3", ""}
_MODELNEW = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)
_CODE_START = re.compile(r"^(import |from \S+ import |class ModelNew\b)", re.MULTILINE)



class ExtractionError(ValueError):
    """No usable candidate in the answer; str(error) is feedback for the model."""


class Block(BaseModel):
    lang: str
    code: str
    closed: bool = True


class ExtractedCode(BaseModel):
    code: str
    """The Python source to hand to the harness."""
    source: Literal["fenced", "unfenced"]
    blocks: int = Field(description="fenced blocks in the answer")
    warnings: list[str] = Field(default_factory=list)
    """Non-fatal oddities worth logging (and possibly telling the model)."""


def expected(backend: Backend) -> str:
    return (
        "Expected: exactly one ```python code block containing a complete Python module that defines "
        "`class ModelNew(nn.Module)` with the same __init__ and forward signatures as `Model`, with "
        f"{BACKENDS[backend].how} inside that same block."
    )


def fenced_blocks(text: str) -> list[Block]:
    """Fenced blocks in order. An unclosed last fence (a truncated answer) runs to the end."""
    blocks: list[Block] = []
    pos = 0
    while m := _FENCE.search(text, pos):
        fence = m["fence"]
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = close.search(text, m.end())
        body = text[m.end() : end.start() if end else len(text)]
        blocks.append(Block(lang=m["lang"].lower(), code=body.rstrip() + "\n", closed=end is not None))
        pos = end.end() if end else len(text)
    return blocks


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _free_names(code: str) -> list[str]:
    """Module-level names that are read but never bound (e.g. a cuda_source kept in another block)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    bound = set(dir(__builtins__)) if not isinstance(__builtins__, dict) else set(__builtins__)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    used = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return sorted({n for n in used if n not in bound and n != "__file__"})


def _unfenced(text: str) -> str | None:
    """Code-like text without fences: from the first import/class line, trimming trailing prose."""
    start = _CODE_START.search(text)
    if start is None:
        return None
    lines = text[start.start() :].splitlines()
    # Drop trailing lines until the rest parses: prose after the code is the usual culprit.
    for end in range(len(lines), 0, -1):
        code = "\n".join(lines[:end]).rstrip() + "\n"
        if _MODELNEW.search(code) and _parses(code):
            return code
    return None


def extract_code(text: str, backend: Backend = "cuda") -> ExtractedCode:
    """The candidate module in ``text``: the last Python block defining ModelNew.

    Raises ExtractionError (message = feedback for the model) when there is none.
    """
    if not text or not text.strip():
        raise ExtractionError(f"The answer was empty. {expected(backend)}")
    blocks = fenced_blocks(text)
    with_modelnew = [b for b in blocks if _MODELNEW.search(b.code)]
    python = [b for b in with_modelnew if b.lang in _PY_LANGS]
    # A mislabelled fence (```cpp around Python) still counts when it parses as Python.
    chosen = python[-1] if python else next((b for b in reversed(with_modelnew) if _parses(b.code)), None)
    if chosen is not None:
        warnings: list[str] = []
        if len(with_modelnew) > 1:
            warnings.append(f"{len(with_modelnew)} blocks define ModelNew; used the last one.")
        if not chosen.closed:
            warnings.append("The code block is not closed (the answer may be truncated).")
        others = [b for b in blocks if b is not chosen and b.lang not in _PY_LANGS]
        missing = _free_names(chosen.code)
        if others and missing:
            # Only the Python block is built; source kept in a separate ```cpp/```cuda block is not pasted in.
            warnings.append(
                f"The Python block uses {', '.join(missing)}, which it never defines; code in separate "
                f"```{others[0].lang} blocks is not included. Put all sources inside the Python block."
            )
        if not _parses(chosen.code):
            warnings.append("The Python block has a syntax error.")
        return ExtractedCode(code=chosen.code, source="fenced", blocks=len(blocks), warnings=warnings)
    if not blocks and (code := _unfenced(text)) is not None:
        return ExtractedCode(code=code, source="unfenced", blocks=0,
                             warnings=["No code fence; took the code from the plain text."])
    if blocks:
        langs = ", ".join(f"```{b.lang or '(no language)'}" for b in blocks)
        raise ExtractionError(
            f"The answer has {len(blocks)} code block(s) ({langs}) but none defines `class ModelNew`. "
            f"{expected(backend)}"
        )
    if "ModelNew" in text:
        raise ExtractionError(
            f"The answer mentions ModelNew but contains no code block with a complete Python module. {expected(backend)}"
        )
    raise ExtractionError(f"The answer contains no code. {expected(backend)}")
