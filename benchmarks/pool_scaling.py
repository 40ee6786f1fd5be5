"""The evaluation pool across several GPUs of one host (issue 10): the demo sweep with --gpus 1 and N.

    python benchmarks/pool_scaling.py --device cuda --gpus 1,8 --out DIR     # a multi-GPU host
    python benchmarks/pool_scaling.py --device cpu --gpus 1,2 --out DIR      # the same pool on CPU workers

Every demo kernel for the backend is compiled first, in parallel, into one build cache, so each sweep
measures evaluation (the part that scales with GPUs), not compilation. Then, in one process, the demo
sweep (``agents.sweep.run_sweep``, model ``demo``, all its problems, up to 3 turns) runs once per N
with a LocalExecutor of N workers (one per GPU, pinned through CUDA_VISIBLE_DEVICES). Recorded per N:
wall seconds, evaluations, evaluations per worker (every GPU used?), the distinct GPUs named in the
records, speedup over N=1, and whether every attempt's candidate and naive/verified verdicts equal
those of the N=1 run. Writes pool_scaling.md / .json and the run stores under --out.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from _results import cores, write_results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from agents.config import SweepConfig  # noqa: E402
from agents.executor import LocalExecutor  # noqa: E402
from agents.store import RunStore  # noqa: E402
from agents.sweep import run_sweep  # noqa: E402


def prebuild(device: str, backend: str, settings, cache_dir: str | None) -> tuple[int, float]:
    sources = [p.read_text() for p in sorted((ROOT / "agents" / "demo_kernels" / backend).glob("*.py"))]
    t0 = time.perf_counter()
    with harness.Evaluator(device, "small", settings=settings, cache_dir=cache_dir) as ev:
        ev.build_many(sources)
    return len(sources), time.perf_counter() - t0


def outcomes(run_dir: Path) -> dict[str, dict]:
    out = {}
    for a in RunStore(run_dir).attempts():
        key = f"{a.problem_id}#s{a.sample}#t{a.turn}"
        out[key] = {"kernel": a.kernel_hash, "naive": (a.results.get("naive") or {}).get("verdict"),
                    "verified": (a.results.get("verified") or {}).get("verdict"),
                    "gpu": (a.record or {}).get("gpu_index")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpus", default="1,2", help="comma-separated worker counts; the first is the reference run")
    ap.add_argument("--size", default="small")
    ap.add_argument("--cache-dir", default=None, help="build cache shared by the prebuild and every sweep")
    ap.add_argument("--verified-seconds", type=float, default=None,
                    help="EvalSettings.verified_seconds_per_subject (default: the sweep's); shorter keeps a GPU run small")
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend = "cuda" if args.device.startswith("cuda") else "cpu"
    base = dict(models=["demo"], device=backend, size=args.size, progress=False)
    settings = SweepConfig(**base).resolved().eval_settings_obj()  # what the sweep itself would use
    if args.verified_seconds is not None:
        settings = settings.model_copy(update={"verified_seconds_per_subject": args.verified_seconds})
    n_src, build_s = prebuild(args.device, backend, settings, args.cache_dir)
    print(f"prebuilt {n_src} demo kernels in {build_s:.0f} s", flush=True)
    rows, ref = [], None
    for n in [int(x) for x in args.gpus.split(",")]:
        run_dir = out / f"sweep_gpus{n}"
        cfg = SweepConfig(**base, gpus=n, run_dir=run_dir)
        ex = LocalExecutor(args.device, args.size, gpus=n, settings=settings, cache_dir=args.cache_dir,
                           protocols=cfg.protocols)
        t0 = time.perf_counter()
        try:
            run_sweep(cfg, executor=ex)
        finally:
            stats = ex.stats()
            ex.close()
        wall = time.perf_counter() - t0
        got = outcomes(run_dir)
        ref = ref if ref is not None else got
        same = {k: v for k, v in got.items() if k in ref and {**v, "gpu": None} == {**ref[k], "gpu": None}}
        row = {"workers": n, "wall_s": wall, "evaluations": stats.done, "per_worker": stats.per_worker,
               "gpus_in_records": sorted({v["gpu"] for v in got.values() if v["gpu"] is not None}),
               "attempts": len(got), "identical_to_first": len(same) == len(ref) == len(got),
               "differences": sorted(set(ref) ^ set(got)) + [k for k in got if k in ref and k not in same],
               "verified": {v: sum(1 for o in got.values() if o["verified"] == v) for v in harness.VERDICTS}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    first = rows[0]["wall_s"]
    gpu = ""
    if args.device.startswith("cuda"):
        import torch

        gpu = f", {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
    lines = [f"Demo sweep on {platform.node()} ({cores()}{gpu}, device {args.device}, size {args.size}); "
             f"{n_src} demo kernels prebuilt in {build_s:.0f} s before the timed sweeps; "
             f"verified timing {settings.verified_seconds_per_subject:g} s per subject.", "",
             "| workers | wall s | speedup vs first | evaluations | per worker | GPUs named in records | "
             "attempts | identical to first run | verified verdicts |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workers']} | {r['wall_s']:.0f} | {first / r['wall_s']:.2f}x | {r['evaluations']} | "
                     f"{r['per_worker']} | {r['gpus_in_records'] or '-'} | {r['attempts']} | "
                     f"{r['identical_to_first']} | {', '.join(f'{k} {v}' for k, v in r['verified'].items() if v)} |")
    write_results(out, "pool_scaling", "\n".join(lines) + "\n", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
