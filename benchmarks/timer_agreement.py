"""Does the verified timer measure what the GPU did? Its figures against CUPTI's (torch.profiler).

    python benchmarks/timer_agreement.py --out DIR            # needs a CUDA GPU

For each subject (PyTorch references, Triton kernels, a correctly synchronised two-stream kernel and
the side-stream hack, 10 us to several ms) it measures, in one process and on the same inputs:

* verified: the harness's verified timer (``harness.measure.timing.time_verified``: L2 flush and
  persisting-L2 reset before each iteration, rotating input sets, CUDA events on the current stream,
  the start event queued behind a device-side hold of ``EvalSettings.verified_launch_lead_us`` so the
  host has launched the subject's first kernels before the device reaches them);
* synced:   the same events with a device-wide synchronize before the end event
  (``event_vs_synced``, what the side-stream guard compares against);
* idle start: the verified timer without that hold (the start event recorded on an idle device, as
  the harness did before the hold and as KernelBench does): the interval includes launch latency;
* profiler: CUPTI kernel records from torch.profiler for iterations run the same way (L2 flushed
  before each). Per iteration: ``span`` = first kernel start to last kernel end on any stream, and
  ``busy`` = the sum of kernel durations.

The ratio verified / profiler-span is the timer's error. Events include the launch of the first
kernel and the gaps between kernels, so the ratio sits above 1 for kernels of a few microseconds and
should approach 1 as they grow. For the side-stream hack the current-stream events close before the
work is done: verified << profiler, and synced agrees with the profiler, which is how the harness
catches it. Writes timer_agreement.md / .json under --out.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _results import write_results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import problems  # noqa: E402
from harness import EvalSettings  # noqa: E402
from harness.measure.device import DeviceOps  # noqa: E402
from harness.measure.timing import Subject, VerifiedBudget, event_vs_synced, time_verified  # noqa: E402

FIX = ROOT / "harness" / "fixtures"
SUBJECTS = [  # (label, problem, size, candidate file or None for the PyTorch reference, TF32 on)
    ("ReLU, PyTorch", "level1/19_ReLU", "small", None, False),
    ("Softmax, PyTorch", "level1/23_Softmax", "small", None, False),
    ("Softmax, Triton", "level1/23_Softmax", "small", "legit/cuda/triton_softmax.py", False),
    ("MinGPT GELU, PyTorch (8 kernels)", "level1/88_MinGPTNewGelu", "full", None, False),
    ("LayerNorm, PyTorch", "level1/40_LayerNorm", "full", None, False),
    ("Conv2d+ReLU+bias, PyTorch (3 kernels)", "level2/1_Conv2D_ReLU_BiasAdd", "full", None, False),
    ("matmul 4096^3 fp32, cuBLAS", "level1/1_Square_matrix_multiplication_", "full", None, False),
    ("matmul 4096^3 TF32, cuBLAS", "level1/1_Square_matrix_multiplication_", "full", None, True),
    ("matmul TF32, Triton", "level1/1_Square_matrix_multiplication_", "full", "legit/cuda/triton_tf32_matmul.py", False),
    ("matmul on two synchronised streams", "level1/1_Square_matrix_multiplication_", "full",
     "legit/cuda/two_streams_synced_matmul.py", False),
    ("side-stream matmul (hack T1)", "level1/1_Square_matrix_multiplication_", "full",
     "hacks/cuda/side_stream_matmul.py", False),
    ("matmul on a stream that starts early (hack, caught by waits_for_caller_stream)",
     "level1/1_Square_matrix_multiplication_", "full", "hacks/cuda/early_start_side_stream_matmul.py", True),
]
N_SETS = 2
PROFILED_ITERS = 15


@functools.cache
def _tmp() -> Path:
    """Where subjects' sources are written: made on first use (not at import), removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="timer-agreement-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def _namespace(source: str, name: str) -> dict:
    """Import ``source`` from a real file (Triton's JIT reads a kernel's source through inspect)."""
    import importlib.util

    path = _tmp() / f"{name}_{abs(hash(source)) % 10**8}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return vars(mod)


def build_subject(pid: str, size: str, candidate: str | None):
    prob = problems.load(pid)
    ref = _namespace(prob.source(size), "reference")
    torch.manual_seed(0)
    init = list(ref["get_init_inputs"]())
    if candidate:
        model = _namespace((FIX / candidate).read_text(), "candidate")["ModelNew"](*init)
    else:
        model = ref["Model"](*init)
    model = model.cuda().eval()
    sets = []
    for s in range(N_SETS):
        torch.manual_seed(100 + s)
        sets.append([x.cuda() if isinstance(x, torch.Tensor) else x for x in ref["get_inputs"]()])

    @torch.no_grad()
    def fn(i: int):
        return model(*sets[i % N_SETS])

    return fn


def profile(fn, ops: DeviceOps, iters: int) -> tuple[list[float], list[float], int]:
    """Per-iteration (span ms, busy ms) from CUPTI records, and how many streams ran kernels. Each
    iteration is: L2 flush, a marker kernel (bitwise_not on an int32 buffer, which no subject
    launches), sync, the subject, sync; the kernels between two markers less the trailing flush are
    the subject's."""
    marker = torch.zeros(1 << 20, dtype=torch.int32, device="cuda")
    for i in range(3):
        fn(i)
    ops.sync()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for i in range(iters):
            ops.flush_l2()
            marker.bitwise_not_()
            ops.sync()
            out = fn(i)
            ops.sync()
            del out
        ops.flush_l2()
        marker.bitwise_not_()
        ops.sync()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.loads(Path(f.name).read_text())
    return segments([e for e in trace["traceEvents"] if e.get("cat") == "kernel"])


def segments(kernel_events: list[dict]) -> tuple[list[float], list[float], int]:
    """Chrome-trace kernel events -> per-iteration (span ms, busy ms), number of streams: the kernels
    between two markers, less the trailing L2 flush."""
    kernels = sorted(kernel_events, key=lambda e: e["ts"])
    cuts = [k["ts"] for k in kernels if "bitwise_not" in k["name"]]
    spans, busy, streams = [], [], set()
    for a, b in zip(cuts, cuts[1:], strict=False):
        ks = [k for k in kernels if a < k["ts"] < b]
        # Each segment ends with the next iteration's L2 flush (a fill of the flush buffer): drop it.
        if ks and "FillFunctor" in ks[-1]["name"]:
            ks = ks[:-1]
        if not ks:
            continue
        streams.update(k.get("args", {}).get("stream") for k in ks)
        spans.append((max(k["ts"] + k["dur"] for k in ks) - min(k["ts"] for k in ks)) / 1e3)
        busy.append(sum(k["dur"] for k in ks) / 1e3)
    return spans, busy, len(streams)


def measure(label: str, pid: str, size: str, candidate: str | None, tf32: bool, ops: DeviceOps) -> dict:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    fn = build_subject(pid, size, candidate)
    subj = Subject(label, fn)
    lead = EvalSettings().verified_launch_lead_us
    time_verified([subj], N_SETS, ops, VerifiedBudget(min_iters=30, max_iters=300, max_seconds_per_subject=2.0,
                                                      launch_lead_us=lead))
    idle = Subject(label, fn)
    time_verified([idle], N_SETS, ops, VerifiedBudget(min_iters=30, max_iters=300, max_seconds_per_subject=2.0))
    plain, synced, sync_cost = event_vs_synced(lambda: fn(0), ops, iters=15)
    idle_ms = statistics.median(idle.samples)
    spans, busy, n_streams = profile(fn, ops, PROFILED_ITERS)
    verified = statistics.median(subj.samples)
    span = statistics.median(spans) if spans else float("nan")
    row = {"subject": label, "problem": pid, "size": size, "candidate": candidate, "tf32": tf32,
           "verified_ms": verified, "verified_n": len(subj.samples), "events_ms": plain, "synced_ms": synced, "sync_cost_ms": sync_cost,
           "launch_lead_us": lead,
           "idle_start_ms": idle_ms, "idle_start_over_profiler": idle_ms / span if span == span and span > 0 else None,
           "profiler_span_ms": span, "profiler_busy_ms": statistics.median(busy) if busy else float("nan"),
           "profiled_iters": len(spans), "streams": n_streams,
           "verified_over_profiler": verified / span if span == span and span > 0 else None,
           "synced_over_profiler": synced / span if span == span and span > 0 else None}
    fn = subj = None  # drop the model and its inputs before the next subject
    torch.cuda.empty_cache()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results")
    ap.add_argument("--only", default="", help="comma-separated substrings of subject labels")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ops = DeviceOps("cuda")
    only = [s.lower() for s in args.only.split(",") if s]
    rows = []
    for label, pid, size, cand, tf32 in SUBJECTS:
        if only and not any(s in label.lower() for s in only):
            continue
        try:
            rows.append(measure(label, pid, size, cand, tf32, ops))
        except Exception as exc:  # noqa: BLE001 - one subject must not lose the table
            rows.append({"subject": label, "error": f"{type(exc).__name__}: {exc}"[:500]})
        print(json.dumps(rows[-1]), flush=True)
    lines = [f"Verified timer vs CUPTI (torch.profiler) on {torch.cuda.get_device_name(0)}, torch {torch.__version__}. "
             "Medians; `span` = first kernel start to last kernel end per iteration, `busy` = sum of kernel durations.", "",
             "| subject | problem (size) | verified ms | synced ms | idle start ms | profiler span ms | profiler busy ms | "
             "streams | verified / span | synced / span | idle start / span |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['subject']} | error: {r['error'][:120]} | | | | | | | | | |")
            continue
        q = "-" if r.get("idle_start_ms") is None else f"{r['idle_start_ms']:.4f}"
        qr = "-" if r.get("idle_start_over_profiler") is None else f"{r['idle_start_over_profiler']:.3f}"
        lines.append(f"| {r['subject']} | {r['problem']} ({r['size']}) | {r['verified_ms']:.4f} | {r['synced_ms']:.4f} | "
                     f"{q} | {r['profiler_span_ms']:.4f} | {r['profiler_busy_ms']:.4f} | {r['streams']} | "
                     f"{r['verified_over_profiler']:.3f} | {r['synced_over_profiler']:.3f} | {qr} |")
    write_results(out, "timer_agreement", "\n".join(lines) + "\n", {"device": torch.cuda.get_device_name(0), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
