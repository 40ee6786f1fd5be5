"""Rendering a problem file at a size preset.

A problem file is a plain KernelBench file at size ``full``. A smaller size is the same file
with some module-level constants rewritten (``batch_size = 4096`` -> ``batch_size = 16``), so
the prompt shows, and the harness executes, exactly the source being evaluated. Constants
derived from others (``dim2 = dim * 2``) follow automatically because the file is re-executed.
"""

from __future__ import annotations

import ast
from typing import Any


class SizePresetError(ValueError):
    """A size preset names a constant the problem file does not assign at module level."""


def module_constants(source: str) -> dict[str, ast.expr]:
    """Module-level ``NAME = expr`` assignments, in file order."""
    out: dict[str, ast.expr] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


def render_at_size(source: str, overrides: dict[str, Any]) -> str:
    """Return ``source`` with the module-level constants in ``overrides`` replaced by new literals."""
    if not overrides:
        return source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    seen: set[str] = set()
    # Replace from the bottom up so earlier line offsets stay valid.
    edits = []
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        if target is not None and target in overrides:
            seen.add(target)
            edits.append((value, repr(overrides[target])))
    missing = set(overrides) - seen
    if missing:
        raise SizePresetError(f"size preset overrides unknown module-level constants: {sorted(missing)}")
    for value, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        start, end = value.lineno - 1, value.end_lineno - 1
        head = lines[start][: value.col_offset]
        tail = lines[end][value.end_col_offset :]
        lines[start : end + 1] = [head + text + tail]
    return "".join(lines)
