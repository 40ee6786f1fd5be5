"""The reference process: computes expected outputs before the candidate exists anywhere.

For every trial it writes ``<ref_dir>/<distribution>_<i>.pt`` (the expected output) and a JSON
sidecar with the TF32 baseline's own error and whether the reference was non-finite. Naive trials
use PyTorch's default flags in fp32 (what KernelBench compared against); verified trials use the
exact reference: TF32 off for matmul and cuDNN, float64 where the problem supports it.

Run as ``python -m harness.reference JOB.json``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import torch

from problems.domains import Domain
from problems.module import exec_source, forward_arg_names

from .compare import error_stats
from .inputs import (
    KERNELBENCH_SEED,
    TrialSpec,
    floating_args,
    load_matching,
    make_inputs,
    perturbed_parameters,
    plan_trials,
)
from .job import JobSpec


@contextlib.contextmanager
def tf32(enabled: bool | None):
    """enabled=None keeps PyTorch's defaults (matmul TF32 off, cuDNN TF32 on)."""
    m, c = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if enabled is not None:
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = m, c


def build_model(mod, device: str) -> torch.nn.Module:
    torch.manual_seed(KERNELBENCH_SEED)
    init = mod.get_init_inputs()
    torch.manual_seed(KERNELBENCH_SEED)
    return mod.Model(*init).to(device)


def _shape_meta(out) -> dict:
    """What the candidate process needs to know of an expected output before loading it: its size."""
    if not isinstance(out, torch.Tensor):
        return {}
    return {"numel": out.numel(), "dtype": str(out.dtype).removeprefix("torch.")}


def trial_plan(job: JobSpec, mod, names: list[str]) -> tuple[list[TrialSpec], list[TrialSpec]]:
    """Both processes call this, so they agree on trials (the reference may then skip some when outputs are huge)."""
    domains = {k: Domain(v) for k, v in job.domains.items()}
    with torch.device("meta"):
        meta_inputs = list(mod.get_inputs())
    fargs = floating_args(meta_inputs, names)
    naive, verified = plan_trials(job.settings.naive_trials, job.settings.verified_base_trials,
                                  job.fresh_seeds, domains, fargs)
    return naive, verified


def _run(model, inputs, seed):
    torch.manual_seed(seed)  # forward passes that draw random numbers see the same stream on both sides
    with torch.no_grad():
        return model(*inputs)


def _to_double(inputs):
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def environment(device: str) -> dict:
    import platform
    import socket

    env = {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
           "hostname": socket.gethostname(), "cpu_threads": torch.get_num_threads(), "device_name": platform.processor() or "cpu"}
    if device.startswith("cuda"):
        env["device_name"] = torch.cuda.get_device_name(torch.device(device))
        try:
            import subprocess

            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.mem,clocks.max.sm",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
            parts = [x.strip() for x in q.stdout.strip().splitlines()[0].split(",")]
            env["driver"] = parts[0]
            env["clocks"] = {"sm": parts[1], "mem": parts[2], "max_sm": parts[3]}
        except Exception:  # noqa: BLE001 - clocks are informative only
            pass
    return env


def main(job_path: str) -> int:
    job = JobSpec.model_validate_json(Path(job_path).read_text())
    torch.set_grad_enabled(False)
    if job.settings.cpu_threads:
        torch.set_num_threads(job.settings.cpu_threads)
    out_dir = Path(job.ref_dir)
    mod = exec_source(job.problem_source, f"<{job.problem_id}>")
    names = forward_arg_names(mod)
    domains = {k: Domain(v) for k, v in job.domains.items()}
    naive, verified = trial_plan(job, mod, names)
    device = job.device

    model = build_model(mod, device)
    summary = {"naive": [], "verified": [], "reference_precision": "float64"}
    budget = job.settings.expected_bytes_budget
    written = 0
    for i, t in enumerate(naive):
        inputs = make_inputs(mod.get_inputs, names, t.seed, t.scale, domains, device)
        with tf32(None):
            out = _run(model, inputs, t.seed)
        nbytes = out.numel() * out.element_size() if isinstance(out, torch.Tensor) else 0
        if i > 0 and written + nbytes > budget:
            break  # keep at least one trial; the record shows how many ran
        torch.save(out.detach().cpu() if isinstance(out, torch.Tensor) else out, out_dir / f"naive_{i}.pt")
        written += nbytes
        summary["naive"].append({"seed": t.seed, "nonfinite": bool(isinstance(out, torch.Tensor) and not torch.isfinite(out).all()),
                                 **_shape_meta(out)})
        del out, inputs

    # Verified: perturbed parameters, exact reference, TF32 baseline error on the same inputs.
    values = perturbed_parameters(model, job.perturb_seed)
    load_matching(model, values)
    exact_model = model
    use_double = True
    try:
        exact_model = build_model(mod, device)
        load_matching(exact_model, values)
        exact_model = exact_model.double()
    except Exception:  # noqa: BLE001 - some layers have no float64 kernel; fall back to exact fp32
        use_double = False
        exact_model = model
        summary["reference_precision"] = "float32-no-tf32"
    base_trials = [t for t in verified if t.distribution == "base"]
    kept_base = 0
    for t in verified:
        if t.distribution == "base" and kept_base >= 1 and written > budget:
            summary["verified"].append({"seed": t.seed, "skipped": True})
            continue
        inputs = make_inputs(mod.get_inputs, names, t.seed, t.scale, domains, device)
        exact = None
        if use_double:
            try:
                with tf32(False):
                    exact = _run(exact_model, _to_double(inputs), t.seed)
            except Exception:  # noqa: BLE001
                exact = None
        if exact is None:
            with tf32(False):
                exact = _run(model, inputs, t.seed)
            summary["reference_precision"] = "float32-no-tf32"
        with tf32(True):
            fast = _run(model, inputs, t.seed)
        nonfinite = not bool(torch.isfinite(exact).all())
        stats = error_stats(fast, exact) if not nonfinite else None
        if isinstance(exact, torch.Tensor) and exact.dtype == torch.float64 and exact.numel() * 8 > 256 * 2**20:
            exact = exact.float()  # large outputs: fp32 copy of the exact value keeps disk use bounded
        idx = len(summary["verified"])
        torch.save(exact.detach().cpu(), out_dir / f"verified_{idx}.pt")
        written += exact.numel() * exact.element_size()
        if t.distribution == "base":
            kept_base += 1
        summary["verified"].append({
            "seed": t.seed, "distribution": t.distribution, "nonfinite": nonfinite,
            "tf32_max_abs": stats.max_abs if stats else None,
            "tf32_min_tolerance": stats.min_tolerance if stats else None,
            **_shape_meta(exact),
        })
        del exact, fast, inputs
    summary["n_base_planned"] = len(base_trials)
    summary["environment"] = environment(device)
    (out_dir / "summary.json").write_text(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
