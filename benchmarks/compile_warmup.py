"""Where a judge's torch.compile baseline spends its time (issue 31): the same model compiled in a fresh process
cold, and in a fresh process that first warmed torch.compile's machinery up on an unrelated function (imports,
Inductor's compile workers, Triton's driver), the compile and first calls timed apart from the warm-up.

    python benchmarks/compile_warmup.py --device cuda [--problems 1/23,2/14] --out DIR

Each case runs in its own process with its own empty Inductor cache folder (cold) or the folder the previous case
filled (warm cache), so the figures say what a spare, pre-warmed judge would save of the gated preparation."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
device = sys.argv[1]; prewarm = sys.argv[2] == "1"; pid = sys.argv[3]
out = {"import_torch_s": time.perf_counter() - t0}
t = time.perf_counter(); torch.zeros(1, device=device); torch.cuda.synchronize() if device == "cuda" else None
out["device_init_s"] = time.perf_counter() - t
if prewarm:
    t = time.perf_counter()
    f = torch.compile(lambda x: (x * 2).sin())
    f(torch.randn(8, device=device))
    torch.cuda.synchronize() if device == "cuda" else None
    out["prewarm_s"] = time.perf_counter() - t
sys.path.insert(0, sys.argv[4])
from problems import catalog
from problems.module import exec_source
from harness.measure.reference import build_model
mod = exec_source(catalog.load(pid).source(sys.argv[5]), pid)
model = build_model(mod, device)
inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
t = time.perf_counter(); c = torch.compile(model)
with torch.no_grad():
    c(*inputs); torch.cuda.synchronize() if device == "cuda" else None
    out["compile_first_call_s"] = time.perf_counter() - t
    t = time.perf_counter(); c(*inputs); torch.cuda.synchronize() if device == "cuda" else None
    out["second_call_s"] = time.perf_counter() - t
print(json.dumps(out))
"""


def case(device: str, problem: str, prewarm: bool, cache: Path, size: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"), TRITON_CACHE_DIR=str(cache / "triton"))
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", _CHILD, device, "1" if prewarm else "0", problem, str(ROOT), size],
                         capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        return {"error": res.stderr[-1500:], "wall_s": wall}
    return {**json.loads(res.stdout.strip().splitlines()[-1]), "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--problems", default="1/23,2/14")
    ap.add_argument("--size", default="full")
    ap.add_argument("--out", default="results")
    a = ap.parse_args()
    rows = []
    for pid in a.problems.split(","):
        with tempfile.TemporaryDirectory() as d:
            cache = Path(d)
            for label, prewarm in (("cold", False), ("warm cache", False), ("warm cache, pre-warmed", True)):
                r = {"problem": pid, "case": label, **case(a.device, pid, prewarm, cache, a.size)}
                rows.append(r)
                print(json.dumps(r), flush=True)
        with tempfile.TemporaryDirectory() as d:
            r = {"problem": pid, "case": "cold cache, pre-warmed", **case(a.device, pid, True, Path(d), a.size)}
            rows.append(r)
            print(json.dumps(r), flush=True)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "compile_warmup.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
