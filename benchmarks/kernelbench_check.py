"""Check published kernels the way their authors' harnesses did, in one process, beside the harness's naive verdict
(issue 32, "naive vs the authors").

    python benchmarks/kernelbench_check.py [--device cuda] [--modes train,eval,poison] [--out DIR] \
        KEY=KERNEL.py:PROBLEM.py ...

Each kernel is judged by a re-implementation of the published correctness check (KernelBench's, as CUDA-L1's
``eval/eval_cuda.py`` copied it), not by this repository's harness:

* problem and kernel are ``exec``'d from strings, so nothing in them has a source file (``torch.jit.script`` cannot
  read a function defined there; the harness imports candidates from a file so Triton's JIT can read them);
* ``Model`` and ``ModelNew`` are built from ``get_init_inputs()`` under seed 42, and five trial seeds are drawn from
  seed 42; each trial draws ``get_inputs()`` under its seed and calls the reference, then the kernel, in this
  process under ``torch.no_grad()``, with no memory poisoned in between;
* the outputs are compared with ``torch.allclose(atol=1e-2, rtol=1e-2)`` after a shape check, in this process, so a
  tensor subclass is compared as its own ``__torch_function__`` presents it.

Modes: ``train`` is KernelBench as published (modules stay in training mode: BatchNorm uses the batch's statistics);
``eval`` calls ``.eval()`` on both models before every trial, as CUDA-L1's evaluation does; ``poison`` is ``train``
with freed memory filled with NaN before each kernel call (what the harness does before every call), to show which
verdicts hang on what an unwritten output happens to hold. Writes DIR/NAME.json and DIR/NAME.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SEED = 42
TRIALS = 5
TOL = 1e-2
MODES = ("train", "eval", "poison")


def _seed(s: int) -> None:
    import torch

    torch.manual_seed(s)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(s)


def _to(x, device: str):
    import torch

    return x.to(device) if isinstance(x, torch.Tensor) else x


def _poison_free_memory(like, device: str) -> None:
    """Fill a block the size of the expected output with NaN and free it: the caching allocator hands it back to the
    kernel's next allocation of that size."""
    import torch

    if isinstance(like, torch.Tensor) and like.is_floating_point():
        torch.empty(like.numel(), dtype=like.dtype, device=device).fill_(float("nan"))


def check(kernel_src: str, problem_src: str, device: str, modes: tuple[str, ...]) -> dict:
    """Verdict per mode: correct, incorrect, compile_error (the kernel's source did not load: a syntax error or a failed
    extension build) or runtime_error (building ModelNew or calling it raised); with a one-line detail."""
    import torch

    ref_ns: dict = {"__name__": "reference"}
    exec(compile(problem_src, "<reference>", "exec"), ref_ns)  # noqa: S102 - the published protocol execs sources
    new_ns: dict = {"__name__": "kernel"}
    try:
        exec(compile(kernel_src, "<kernel>", "exec"), new_ns)  # noqa: S102
        new_ns["ModelNew"]  # noqa: B018 - a source without ModelNew did not load either
    except BaseException as exc:  # noqa: BLE001 - any failure to load is the verdict
        return {m: {"verdict": "compile_error", "detail": f"{type(exc).__name__}: {str(exc)[:300]}"} for m in modes}
    out = {}
    for mode in modes:
        out[mode] = _trials(ref_ns, new_ns["ModelNew"], device, mode)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return out


def _trials(ref_ns: dict, model_new, device: str, mode: str) -> dict:
    import torch

    _seed(SEED)
    init = [_to(x, device) for x in ref_ns["get_init_inputs"]()]
    with torch.no_grad():
        _seed(SEED)
        ref = ref_ns["Model"](*init).to(device)
        try:
            _seed(SEED)
            new = model_new(*init).to(device)
        except BaseException as exc:  # noqa: BLE001
            return {"verdict": "runtime_error", "detail": f"init: {type(exc).__name__}: {str(exc)[:300]}"}
        _seed(SEED)
        seeds = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(TRIALS)]
        worst = 0.0
        for i, s in enumerate(seeds):
            _seed(s)
            inputs = [_to(x, device) for x in ref_ns["get_inputs"]()]
            if mode == "eval":
                ref.eval()
                new.eval()
            _seed(s)
            expected = ref(*inputs)
            if mode == "poison":
                _poison_free_memory(expected, device)
            try:
                _seed(s)
                got = new(*inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
            except BaseException as exc:  # noqa: BLE001
                return {"verdict": "runtime_error", "detail": f"trial {i}: {type(exc).__name__}: {str(exc)[:300]}"}
            if tuple(got.shape) != tuple(expected.shape):
                return {"verdict": "incorrect", "detail": f"trial {i}: shape {tuple(got.shape)} vs {tuple(expected.shape)}"}
            if not torch.allclose(expected, got, atol=TOL, rtol=TOL):
                diff = (expected.float() - torch.as_tensor(got).float()).abs().max().item()
                return {"verdict": "incorrect", "detail": f"trial {i}: max abs difference {diff:.3g}",
                        "type": type(got).__name__}
            worst = max(worst, (expected.float() - torch.as_tensor(got).float()).abs().max().item())
    return {"verdict": "correct", "detail": f"{TRIALS} trials, max abs difference {worst:.3g}", "type": type(got).__name__}


def _one(args: argparse.Namespace) -> int:
    """Child process: one kernel, every mode; prints one JSON line last (a crash leaves only the text before it)."""
    kernel, problem = args.one.split(":", 1)
    res = check(Path(kernel).read_text(), Path(problem).read_text(), args.device, tuple(args.modes.split(",")))
    print("\nRESULT " + json.dumps(res))
    return 0


def run_all(specs: list[str], device: str, modes: str, timeout: float) -> list[dict]:
    rows = []
    for spec in specs:
        key, paths = spec.split("=", 1)
        proc = subprocess.run([sys.executable, __file__, "--one", paths, "--device", device, "--modes", modes],
                              capture_output=True, text=True, timeout=timeout)
        text = proc.stdout + proc.stderr
        line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("RESULT ")), None)
        res = json.loads(line[len("RESULT "):]) if line else {
            m: {"verdict": "crashed", "detail": f"exit {proc.returncode}"} for m in modes.split(",")}
        errors = [ln.strip() for ln in text.splitlines() if " error" in ln.lower() or ln.startswith("error")][:6]
        rows.append({"key": key, "kernel": paths.split(":", 1)[0], **{m: res.get(m) for m in modes.split(",")},
                     "build_errors": errors})
        print(key, {m: (res.get(m) or {}).get("verdict") for m in modes.split(",")}, flush=True)
    return rows


def render(rows: list[dict], modes: list[str], device: str) -> str:
    out = [f"Published kernels under the published correctness check ({device}; modes: "
           + ", ".join(modes) + ")", "",
           "| kernel | " + " | ".join(modes) + " | detail |", "|---|" + "---|" * len(modes) + "---|"]
    for r in rows:
        cells = [(r.get(m) or {}).get("verdict", "-") for m in modes]
        details = "; ".join(f"{m}: {r[m]['detail']}" for m in modes if r.get(m))
        if r.get("build_errors"):
            details += "; build: " + " / ".join(r["build_errors"][:2])
        out.append(f"| {r['key']} | " + " | ".join(cells) + f" | {details[:400]} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("specs", nargs="*", help="KEY=KERNEL.py:PROBLEM.py")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--name", default="kernelbench_check")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return _one(args)
    bad = [m for m in args.modes.split(",") if m not in MODES]
    if bad:
        raise SystemExit(f"modes must be among {MODES}: {bad}")
    rows = run_all(args.specs, args.device, args.modes, args.timeout)
    text = render(rows, args.modes.split(","), args.device)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{args.name}.json").write_text(json.dumps({"device": args.device, "rows": rows}, indent=1))
        (args.out / f"{args.name}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
