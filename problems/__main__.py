"""``python -m problems list|show``: browse the catalog."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from . import ProblemNotFound, TensorSpec, input_specs, list_problems, load
from .roofline import count


def _entry(p) -> dict:
    return {"id": p.id, "level": p.level, "number": p.number, "name": p.name,
            "flags": [f.model_dump() for f in p.meta.flags],
            "domains": {k: str(v) for k, v in p.meta.domains.items()}, "has_small": bool(p.meta.small)}


def _wrap(text: str, width: int, sep: str) -> list[str]:
    """``text`` in lines of at most ``width``, broken only after ``sep`` (a problem name after '_', flags after ',');
    a piece longer than ``width`` stands alone on its line, whole."""
    lines, cur = [], ""
    pieces = [p + sep for p in text.split(sep)]
    pieces[-1] = pieces[-1][: -len(sep)] if sep else pieces[-1]
    for piece in pieces:
        if cur and len(cur) + len(piece.rstrip()) > width:
            lines.append(cur)
            cur = ""
        cur += piece
    return [*lines, cur] if cur or not lines else lines


def listing(items, width: int) -> list[str]:
    """``problems list`` as a table that fits ``width`` columns: the short id (what --problems and show take), the
    name, the flags; names wrap after an underscore and flags after a comma, never inside a word."""
    rows = [(f"{p.level}/{p.number}", p.name.split("_", 1)[1] if "_" in p.name else p.name,
             ",".join(f.kind for f in p.meta.flags) or "-") for p in items]
    head = ("id", "name", "flags")
    idw = max(len(head[0]), *(len(r[0]) for r in rows)) if rows else len(head[0])
    flagw_full = max(len(head[2]), *(len(r[2]) for r in rows)) if rows else len(head[2])
    longest_flag = max([len(head[2]), *(len(f) + 1 for r in rows for f in r[2].split(","))])
    room = max(20, width - idw - 4)
    flagw = min(flagw_full, max(longest_flag, room // 3))
    namew = min(max(len(head[1]), *(len(r[1]) for r in rows)) if rows else 4, max(8, room - flagw))
    out = [f"{head[0]:<{idw}}  {head[1]:<{namew}}  {head[2]}".rstrip()]
    for pid, name, flags in rows:
        names, flagl = _wrap(name, namew, "_"), _wrap(flags, flagw, ",")
        for i in range(max(len(names), len(flagl))):
            cells = (pid if i == 0 else "", names[i] if i < len(names) else "", flagl[i] if i < len(flagl) else "")
            out.append(f"{cells[0]:<{idw}}  {cells[1]:<{namew}}  {cells[2]}".rstrip())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m problems", description="KernelBench's 250 workloads")
    ap.add_argument("--problems-dir", help="an external KernelBench-format directory (levelN/*.py)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="list problems: id (what --problems and show take), name, flags")
    ls.add_argument("--level", type=int, help="only this level (default: all)")
    ls.add_argument("--json", action="store_true", help="every problem's entry as JSON (full ids, flags, domains)")
    sh = sub.add_parser("show", help="source, input shapes (meta device) and roofline counts of one problem")
    sh.add_argument("id", help="'level1/19_ReLU' or '1/19'")
    sh.add_argument("--size", choices=["small", "full"], default="full", help="which shapes (default: full)")
    sh.add_argument("--json", action="store_true", help="the entry, source, inputs and roofline as JSON")
    args = ap.parse_args(argv)
    try:
        if args.problems_dir is not None and not Path(args.problems_dir).expanduser().is_dir():
            raise ProblemNotFound(f"--problems-dir {args.problems_dir}: no such directory")
        if args.cmd == "list":
            items = list_problems(args.level, args.problems_dir)
            if not items and args.level is not None:
                have = sorted({p.level for p in list_problems(None, args.problems_dir)})
                raise ProblemNotFound(f"--level {args.level}: no such level (there are {', '.join(map(str, have)) or 'none'})")
            if args.json:
                print(json.dumps([_entry(p) for p in items], indent=1))
            else:
                print("\n".join(listing(items, shutil.get_terminal_size().columns)))
            return 0
        p = load(args.id, args.problems_dir)
        specs = input_specs(p, args.size)
        inputs = [({"name": s.name, "shape": list(s.shape), "dtype": s.dtype} if isinstance(s, TensorSpec)
                   else {"name": s.name, "value": s.value}) for s in specs]
        try:
            roof = count(p, args.size).model_dump()
        except Exception as exc:  # noqa: BLE001 - some references cannot run on meta tensors
            roof = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        if args.json:
            print(json.dumps({**_entry(p), "size": args.size, "source": p.source(args.size), "inputs": inputs,
                              "small": p.meta.small, "roofline": roof}, indent=1))
        else:
            print(p.source(args.size))
            print(f"# --- {p.id} at size {args.size}")
            for i in inputs:
                print(f"#   {i['name']}: {i.get('dtype', '')} {i.get('shape', i.get('value'))}")
            if "flops" in roof:
                print(f"#   roofline: {roof['flops']:.4g} FLOPs, {roof['bytes']:.4g} bytes")
            for f in p.meta.flags:
                print(f"#   flag {f.kind}: {f.reason}")
        return 0
    except ProblemNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from .pipes import run_piped

    sys.exit(run_piped(main))
