"""How large the 250 problems' tensors are at a size: what every correctness trial hands over between the judge and
the candidate process (inputs one way, the output the other), per level.

    python benchmarks/tensor_sizes.py [--size full] [--out DIR]

Shapes only: the roofline's counts (problems.roofline), made on PyTorch's meta device, so nothing is allocated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._results import write_results  # noqa: E402

GIB = 2**30


def sizes(size: str) -> list[dict]:
    """Each problem's input and output bytes, as the roofline counts them (problems.roofline, on the meta device)."""
    from problems.catalog import list_problems
    from problems.roofline import count

    return [{"problem": p.id, "level": p.level, "input_bytes": (c := count(p, size)).input_bytes,
             "output_bytes": c.output_bytes} for p in list_problems()]


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
