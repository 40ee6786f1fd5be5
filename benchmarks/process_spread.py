"""Why one kernel's time differs between processes: per-process kernel times next to the GPU's clock,
power, temperature and clock-event (throttle) reasons sampled through NVML while they were timed.

    python benchmarks/process_spread.py --out DIR [--procs 3] [--heat-s 5] [--seconds 1.0]

Each measurement is a fresh Python process that times, the way the verified timer does (L2 flush
before every call, CUDA events, subjects interleaved in rounds of 5, 0.3 s warm-up), four PyTorch
workloads that stress different parts of the GPU: a TF32 tensor-core matmul, an fp32 CUDA-core matmul
(both bound by the SM clock), the minGPT GELU as PyTorch runs it (eight memory-bound kernels) and a
copy (HBM bound). First --procs processes back to back on a GPU that has been idle, then --procs
processes each right after --heat-s seconds of sustained matmuls in another process. Per workload:
max/min of the per-process medians, and whether they follow the SM clock. Writes process_spread.md /
.json under --out. Needs a CUDA GPU; the NVML figures need the driver's libnvidia-ml.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _results import write_results

# NVML clock-event reason bits (nvml.h, nvmlClocksEventReason*).
REASONS = {0x1: "gpu_idle", 0x2: "app_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
           0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks"}


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


class NvmlSampler:
    """Background thread reading SM clock (MHz), power (W), temperature (C) and clock-event reasons."""

    def __init__(self, index: int = 0, period_s: float = 0.01) -> None:
        import pynvml

        self.nv = pynvml
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        self.period_s = period_s
        self.samples: list[tuple[float, int, float, int, int]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def read(self) -> tuple[float, int, float, int, int]:
        nv, h = self.nv, self.h
        return (time.perf_counter(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                nv.nvmlDeviceGetPowerUsage(h) / 1000.0, nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                int(self._reasons(h)))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.read())
            time.sleep(self.period_s)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


class NullSampler:
    samples: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def summarize_nvml(samples: list[tuple[float, int, float, int, int]]) -> dict:
    if not samples:
        return {}
    mask = 0
    for s in samples:
        mask |= s[4]
    clocks = [s[1] for s in samples]
    return {"n": len(samples), "sm_mhz_median": statistics.median(clocks), "sm_mhz_min": min(clocks),
            "sm_mhz_max": max(clocks), "power_w_median": statistics.median(s[2] for s in samples),
            "power_w_max": max(s[2] for s in samples), "temp_c_first": samples[0][3], "temp_c_last": samples[-1][3],
            "reasons": reason_names(mask)}


def workloads(torch):
    n = 4096
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    x = torch.rand(8192, 8192, device="cuda")
    big = torch.empty(256 * 2**20, device="cuda")  # 1 GiB of fp32

    def tf32_mm():
        torch.backends.cuda.matmul.allow_tf32 = True
        out = a @ b
        torch.backends.cuda.matmul.allow_tf32 = False
        return out

    def gelu():
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    return {"matmul 4096^3 TF32 (cuBLAS)": tf32_mm, "matmul 4096^3 fp32 (cuBLAS SGEMM)": lambda: a @ b,
            "minGPT GELU 8192^2 (PyTorch ops)": gelu, "copy 1 GiB": lambda: big.clone()}


def measure(seconds: float, warmup_s: float) -> dict:
    """One process's figures (run in the child)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from harness.measure.device import DeviceOps

    ops = DeviceOps("cuda")
    subjects = workloads(torch)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warmup_s:
        for fn in subjects.values():
            fn()
        ops.sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = {name: [] for name in subjects}
    spent = dict.fromkeys(subjects, 0.0)
    try:
        sampler = NvmlSampler()
    except Exception as exc:  # noqa: BLE001 - no pynvml or no driver library: times only
        print(f"no NVML readings: {exc}", file=sys.stderr)
        sampler = NullSampler()
    with sampler:
        t_begin = time.perf_counter()
        while min(spent.values()) < seconds:
            for name, fn in subjects.items():
                for _ in range(5):
                    ops.flush_l2()
                    ops.sync()
                    t = time.perf_counter()
                    start.record()
                    out = fn()
                    end.record()
                    end.synchronize()
                    spent[name] += time.perf_counter() - t
                    samples[name].append(start.elapsed_time(end))
                    del out
        t_end = time.perf_counter()
    timed = [s for s in sampler.samples if t_begin <= s[0] <= t_end]
    return {"median_ms": {k: statistics.median(v) for k, v in samples.items()},
            "n": {k: len(v) for k, v in samples.items()}, "nvml": summarize_nvml(timed)}


def heat(seconds: float) -> None:
    import torch

    a = torch.randn(8192, 8192, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def spread(xs: list[float]) -> float:
    return max(xs) / min(xs)


def report(runs: list[dict]) -> str:
    names = list(runs[0]["median_ms"])
    lines = ["| process | after | " + " | ".join(f"{n} ms" for n in names)
             + " | SM MHz median (min-max) | power W median (max) | temp C | clock-event reasons |",
             "|---|---|" + "---|" * len(names) + "---|---|---|---|"]
    for i, r in enumerate(runs):
        nv = r["nvml"]
        lines.append(f"| {i + 1} | {r['after']} | " + " | ".join(f"{r['median_ms'][n]:.4f}" for n in names)
                     + f" | {nv.get('sm_mhz_median')} ({nv.get('sm_mhz_min')}-{nv.get('sm_mhz_max')}) | "
                     f"{nv.get('power_w_median', 0):.0f} ({nv.get('power_w_max', 0):.0f}) | "
                     f"{nv.get('temp_c_first')}-{nv.get('temp_c_last')} | {', '.join(nv.get('reasons', [])) or '-'} |")
    lines.append("| max/min | | " + " | ".join(f"{spread([r['median_ms'][n] for r in runs]):.3f}" for n in names)
                 + " | | | | |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results")
    ap.add_argument("--procs", type=int, default=3, help="processes per condition (idle GPU, right after heat)")
    ap.add_argument("--heat-s", type=float, default=5.0)
    ap.add_argument("--seconds", type=float, default=1.0, help="timed seconds per workload per process")
    ap.add_argument("--warmup-s", type=float, default=0.3)
    ap.add_argument("--child", choices=["measure", "heat"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "measure":
        print(json.dumps(measure(args.seconds, args.warmup_s)))
        return 0
    if args.child == "heat":
        heat(args.heat_s)
        return 0
    me = [sys.executable, __file__, "--seconds", str(args.seconds), "--warmup-s", str(args.warmup_s),
          "--heat-s", str(args.heat_s)]
    runs = []
    for after in ["idle"] * args.procs + ["heat"] * args.procs:
        if after == "heat":
            subprocess.run(me + ["--child", "heat"], check=True)
        else:
            time.sleep(2.0)
        res = subprocess.run(me + ["--child", "measure"], check=True, stdout=subprocess.PIPE, text=True)
        run = json.loads(res.stdout.strip().splitlines()[-1]) | {"after": after}
        print(json.dumps(run), flush=True)
        runs.append(run)
    import torch

    text = (f"Per-process kernel times on {torch.cuda.get_device_name(0)} with NVML readings taken while they were "
            f"timed ({args.seconds} s per workload, warm-up {args.warmup_s} s; 'heat': right after {args.heat_s} s "
            "of TF32 matmuls in another process); generated by `benchmarks/process_spread.py`.\n\n" + report(runs))
    write_results(Path(args.out), "process_spread", text, {"runs": runs, "args": vars(args)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
