"""How large the 250 problems' tensors are at a size: what every correctness trial hands over between the judge and
the candidate process (inputs one way, the output the other), per level.

    python benchmarks/tensor_sizes.py [--size full] [--out DIR]

Shapes only: each problem's Model and get_inputs() run on PyTorch's meta device, so nothing is allocated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks._results import write_results  # noqa: E402

GIB = 2**30


def _nbytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_nbytes(y) for y in x)
    return 0


def sizes(size: str) -> list[dict]:
    from problems.catalog import list_problems
    from problems.module import exec_source

    rows = []
    for p in list_problems():
        with torch.device("meta"):
            mod = exec_source(p.source(size), p.id)
            inputs = mod.get_inputs()
            out = mod.Model(*mod.get_init_inputs())(*inputs)
        rows.append({"problem": p.id, "level": p.level, "input_bytes": _nbytes(inputs), "output_bytes": _nbytes(out)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="full")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    rows = sizes(args.size)
    lines = [f"# Tensor sizes of the problems at size {args.size} (meta device; `benchmarks/tensor_sizes.py`)", "",
             "The largest of a problem's inputs (all together) and its output, per level.", "",
             "| level | problems | median largest MiB | >= 512 MiB | >= 1 GiB | >= 4 GiB |", "|---|---|---|---|---|---|"]
    for level in sorted({r["level"] for r in rows}):
        big = sorted(max(r["input_bytes"], r["output_bytes"]) for r in rows if r["level"] == level)
        lines.append(f"| {level} | {len(big)} | {big[len(big) // 2] / 2**20:.0f} | {sum(b >= GIB // 2 for b in big)} | "
                     f"{sum(b >= GIB for b in big)} | {sum(b >= 4 * GIB for b in big)} |")
    write_results(args.out, f"tensor_sizes_{args.size}", "\n".join(lines) + "\n", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
