"""The Ray executor on a CPU-only host: one local Ray cluster (shared by this module) declares fake GPU
types, ``gpu_type:H200`` x2 and ``gpu_type:H100`` x1; workers ask for those instead of real GPUs
(``fake_gpus=True``, or ``--device cpu --gpu-type H200`` on the CLI) and evaluate on the CPU.

Covers routing by GPU type, a worker killed mid-job (retried on another worker, recorded once) and a
driver killed with SIGKILL then resumed (nothing lost, nothing duplicated)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from test_loop_fakes import ScriptedClient, fenced  # noqa: E402

import harness  # noqa: E402
from agents.config import SweepConfig  # noqa: E402
from agents.ray_executor import RayExecutor, gpu_type_of, node_resources  # noqa: E402
from agents.store import RunStore  # noqa: E402
from agents.sweep import run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FAST = dict(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10, verified_seconds_per_subject=0.3,
            cpu_threads=1)
SETTINGS = harness.EvalSettings(**FAST)
RELU = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
'''


def variant(i: int) -> str:
    return RELU + f"\n# variant {i}\n"


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, resources={"gpu_type:H200": 2, "gpu_type:H100": 1}, include_dashboard=False,
             log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _wait(pred, timeout: float, what: str, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def test_gpu_type_names():
    assert gpu_type_of("NVIDIA H100 80GB HBM3") == "H100"
    assert gpu_type_of("NVIDIA H200") == "H200"
    assert gpu_type_of("NVIDIA A100-SXM4-80GB") == "A100"
    assert gpu_type_of("NVIDIA GeForce RTX 4090") == "RTX4090"
    assert node_resources(names=["NVIDIA H200"] * 2) == {"gpu_type:H200": 2}


def test_routing_by_gpu_type(cluster):
    with RayExecutor("cpu", "small", gpu_type="H200", allow_gpu_types=["H100"], fake_gpus=True,
                     settings=SETTINGS) as ex:
        assert sorted(w["label"] for w in ex.workers()) == ["H100#0", "H200#0", "H200#1"]
        on_h100 = ex.submit(variant(1), "1/19", gpu_type="H100")
        on_h200 = ex.submit(variant(2), "1/19", gpu_type="H200")
        with pytest.raises(ValueError):
            ex.submit(RELU, "1/19", gpu_type="A100")
        a, b = on_h100.result(timeout=150), on_h200.result(timeout=150)
        assert a.record.status == b.record.status == "ok"
        assert a.results["verified"].verdict == "correct"
        # Each worker computed the problem's reference beside the build, so the evaluation found it ready.
        assert a.record.phase_seconds["reference"] < 0.05 and b.record.phase_seconds["reference"] < 0.05
        placed = {h["candidate_hash"]: h["worker"] for h in ex.history if h["outcome"] == "ok"}
        assert placed[a.record.candidate_hash] == "H100#0"
        assert placed[b.record.candidate_hash] in ("H200#0", "H200#1")
        assert ex.submit(variant(1), "1/19", gpu_type="H100") is on_h100  # measured once
        assert ex.stats().done == 2 and ex.stats().reused == 1
    with pytest.raises(ValueError, match="gpu_type:A100"):  # the cluster has no A100
        RayExecutor("cpu", "small", gpu_type="A100", fake_gpus=True, settings=SETTINGS)
    # Without allow_gpu_types an H100 sweep has no H200 worker at all, and cannot be sent to one.
    with RayExecutor("cpu", "small", gpu_type="H100", fake_gpus=True, settings=SETTINGS) as ex:
        assert [(w["label"], w["gpu_type"]) for w in ex.workers()] == [("H100#0", "H100")]
        with pytest.raises(ValueError):
            ex.submit(RELU, "1/19", gpu_type="H200")


def test_worker_killed_mid_job_is_retried_elsewhere_and_recorded_once(cluster, tmp_path):
    ex = RayExecutor("cpu", "small", gpu_type="H200", fake_gpus=True, settings=SETTINGS)
    config = SweepConfig(models=["scripted"], problems=["1/19"], turns=1, device="cpu", size="small",
                         run_dir=tmp_path / "run", eval_settings=FAST, progress=False)
    client = ScriptedClient([fenced(variant(3))])
    summaries, errors = [], []

    def sweep():
        try:
            summaries.append(run_sweep(config, executor=ex, clients={"scripted": client}))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    try:
        busy = _wait(lambda: [w for w in ex.workers() if w["running"]], 90, "the job to start on a worker")
        victim = busy[0]["label"]
        time.sleep(1.0)  # the worker is computing the reference or timing the candidate
        ray.kill(ex.actor(victim), no_restart=False)
        thread.join(timeout=150)
        assert not thread.is_alive() and not errors, errors
        runs = [h for h in ex.history if h["problem_id"] == "level1/19_ReLU"]
        assert [h["outcome"] for h in runs] == ["worker_lost", "ok"], runs
        assert runs[0]["worker"] == victim and runs[1]["worker"] != victim  # retried elsewhere
        stats = ex.stats()
        assert stats.retries == 1 and stats.worker_losses == 1 and stats.done == 1
        # Ray restarted the killed worker; it takes jobs again.
        _wait(lambda: [w for w in ex.workers() if w["label"] == victim and w["ready"] and w["info"]["restarted"]],
              60, "the killed worker to restart", step=0.2)
    finally:
        ex.close(cancel=True)
    attempts = RunStore(tmp_path / "run").attempts()
    assert len(attempts) == 1  # recorded once, by the driver
    assert attempts[0].record["status"] == "ok" and attempts[0].results["verified"]["verdict"] == "correct"
    assert summaries[0].attempts == 1 and summaries[0].errors == 0


def _keys(path: Path) -> list[tuple]:
    keys = []
    for line in path.read_text().splitlines():
        try:
            a = json.loads(line)
        except ValueError:
            continue  # a torn line from the kill
        keys.append((a["model"], a["problem_id"], a["sample"], a["turn"]))
    return keys


def test_driver_killed_then_resumed(cluster, tmp_path):
    rec = tmp_path / "recorded"
    rec.mkdir()
    for sample in range(4):
        (rec / f"level_1_problem_19_sample_{sample}_kernel.py").write_text(variant(10 + sample))
    run_dir, spec = tmp_path / "run", f"replay:{rec}"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    fast = [x for k, v in FAST.items() for x in ("--eval-set", f"{k}={v}")]
    cmd = [sys.executable, "-m", "agents.sweep", "--models", spec, "--device", "cpu", "--size", "small",
           "--turns", "1", "--run-dir", str(run_dir), "--no-progress", "--executor", "ray",
           "--ray-address", cluster, "--gpu-type", "H200", *fast]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    attempts = run_dir / "attempts.jsonl"
    try:
        _wait(lambda: proc.poll() is not None or (attempts.exists() and len(_keys(attempts)) >= 1), 150,
              "a first attempt", step=0.1)
        assert proc.poll() is None, proc.stdout.read().decode()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver dies; Ray reaps the workers it owned
        proc.wait()
    before = _keys(attempts)
    assert 1 <= len(before) < 4, before
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["executor"] == "ray" and saved["gpu_type"] == "H200"

    r = subprocess.run([sys.executable, "-m", "agents.sweep", "--run-dir", str(run_dir), "--resume", "--no-progress",
                        "--ray-address", cluster], cwd=ROOT, env=env, capture_output=True, text=True, timeout=200)
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
    after = _keys(attempts)
    assert len(after) == len(set(after)), "duplicated attempts"
    assert set(after) == {(spec, "level1/19_ReLU", s, 1) for s in range(4)}, "lost or unexpected attempts"
    assert set(before) <= set(after)
    for line in attempts.read_text().splitlines():
        a = json.loads(line)
        assert a["record"]["status"] == "ok", a["record"]
