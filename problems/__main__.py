"""``python -m problems list|show``: browse the catalog."""

from __future__ import annotations

import argparse
import json
import sys

from . import ProblemNotFound, TensorSpec, input_specs, list_problems, load
from .roofline import count


def _entry(p) -> dict:
    return {"id": p.id, "level": p.level, "number": p.number, "name": p.name,
            "flags": [f.model_dump() for f in p.meta.flags],
            "domains": {k: str(v) for k, v in p.meta.domains.items()}, "has_small": bool(p.meta.small)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m problems", description="KernelBench's 250 workloads")
    ap.add_argument("--problems-dir", help="an external KernelBench-format directory (levelN/*.py)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="list problems")
    ls.add_argument("--level", type=int)
    ls.add_argument("--json", action="store_true")
    sh = sub.add_parser("show", help="source, input shapes (meta device) and roofline counts of one problem")
    sh.add_argument("id", help="'level1/19_ReLU' or '1/19'")
    sh.add_argument("--size", choices=["small", "full"], default="full")
    sh.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            items = list_problems(args.level, args.problems_dir)
            if args.json:
                print(json.dumps([_entry(p) for p in items], indent=1))
            else:
                for p in items:
                    flags = ",".join(f.kind for f in p.meta.flags)
                    print(f"{p.id:70s} {flags}")
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
