"""Rich tables that fit the terminal: a table too wide for it is split by columns, never squeezed until rich cuts its
words ('geome…', 'verifi…'). Every part repeats the table's first ``keys`` columns (what names a row) and takes as
many of the other columns as fit; a prose column wraps at word boundaries within ``cap`` characters."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

EDGE = 1  # the table's left border
PER_COLUMN = 3  # padding on both sides and the border after


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _widths(table: Table, index: int) -> tuple[int, int]:
    """(natural, longest word) of a column: its widest cell line (a header may wrap at its spaces: 'naive' over
    'correct'), and the longest word of its header and cells."""
    col = table.columns[index]
    cells = [ln for cell in col._cells for ln in _plain(cell).splitlines()] or [""]
    head = _plain(col.header).split() or [""]
    word = max([len(w) for ln in cells for w in ln.split()] + [len(w) for w in head] + [1])
    return max(max(len(ln) for ln in cells), word), word


def fit(table: Table, width: int, keys: int = 1, cap: int = 36) -> list[Table]:
    """``table`` as one or more tables no wider than ``width`` whose words are whole (when any split can do it)."""
    n = len(table.columns)
    sizes = [_widths(table, i) for i in range(n)]
    natural = [max(nat, *(len(ln) for ln in _plain(c.header).splitlines() or [""])) for (nat, _), c in
               zip(sizes, table.columns, strict=True)]
    if sum(natural) + PER_COLUMN * n + EDGE <= width:
        return [table]  # fits with unwrapped headers: as it was built
    need = [min(nat, max(word, cap)) for nat, word in sizes]  # a column's width when there is room
    least = [word for _, word in sizes]  # ... and when there is not: rich wraps it down to its longest word
    keys = min(keys, n - 1)
    widest = max(least[keys:])
    while keys and sum(need[:keys]) + PER_COLUMN * (keys + 1) + EDGE + widest > width:
        keys -= 1  # the naming columns leave no room for the others' words: repeat fewer of them
        widest = max(least[keys:])
    key_cols = list(range(keys))
    base = sum(need[:keys]) + PER_COLUMN * keys + EDGE
    parts: list[list[int]] = [[]]
    used = base
    for i in range(keys, n):
        fits = used + need[i] + PER_COLUMN <= width or (not parts[-1] and used + least[i] + PER_COLUMN <= width)
        if parts[-1] and not fits:
            parts.append([])
            used = base
        parts[-1].append(i)
        used += need[i] + PER_COLUMN
    out = []
    for k, part in enumerate(parts, start=1):
        cols = key_cols + part
        # Widths set here, not left to rich: squeezing a table, rich narrows its widest column first, cutting a
        # problem id rather than wrapping the prose beside it.
        w = {i: need[i] for i in cols}
        excess = sum(w.values()) + PER_COLUMN * len(cols) + EDGE - width
        while excess > 0:
            i = max(cols, key=lambda j: w[j] - least[j])
            if w[i] <= least[i]:
                break  # no column can give way without cutting a word
            cut = min(excess, w[i] - least[i])
            w[i] -= cut
            excess -= cut
        title = _plain(table.title) if table.title is not None else ""
        t = Table(title=f"{title} ({k}/{len(parts)})" if title and len(parts) > 1 else table.title, box=table.box,
                  show_lines=table.show_lines, show_header=table.show_header,
                  caption=table.caption if k == len(parts) else None)
        for i in cols:
            c = table.columns[i]
            t.add_column(c.header, justify=c.justify, style=c.style, header_style=c.header_style, width=w[i],
                         no_wrap=c.no_wrap)
        for r in range(table.row_count):
            t.add_row(*[table.columns[i]._cells[r] for i in cols])
        out.append(t)
    return out


def print_fitted(console: Console, table: Table, keys: int = 1) -> None:
    for t in fit(table, console.width, keys):
        console.print(t)
