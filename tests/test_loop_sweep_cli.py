"""The CLI: missing keys, and a sweep killed with SIGKILL mid-run then finished by --resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_loop_fakes import RELU_OK

ROOT = Path(__file__).resolve().parent.parent

SIGMOID = RELU_OK.replace("torch.clamp_min(x, 0.0)", "torch.sigmoid(x)")
TANH = RELU_OK.replace("torch.clamp_min(x, 0.0)", "torch.tanh(x)")
LEAKY = RELU_OK.replace("torch.clamp_min(x, 0.0)", "torch.where(x > 0, x, 0.01 * x)")
KERNELS = {19: RELU_OK, 20: LEAKY, 21: SIGMOID, 22: TANH}
FAST = ["--eval-set", "naive_timing_trials=20", "--eval-set", "verified_min_iters=5", "--eval-set",
        "verified_max_iters=20", "--eval-set", "verified_seconds_per_subject=0.3", "--eval-set", "cpu_threads=1"]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def test_missing_key_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "agents.sweep", "--models", "gpt", "--run-dir", str(tmp_path / "r")],
                       cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "OPENAI_API_KEY" in lines[0] and "--models demo" in lines[0] and "replay:" in lines[0]
    assert "Traceback" not in r.stderr and not (tmp_path / "r" / "attempts.jsonl").exists()


def _keys(path: Path) -> list[tuple]:
    keys = []
    for line in path.read_text().splitlines():
        try:
            a = json.loads(line)
        except ValueError:
            continue  # a torn line from the kill
        keys.append((a["model"], a["strategy"], a["problem_id"], a["sample"], a["turn"]))
    return keys


def test_kill_and_resume_loses_and_duplicates_nothing(tmp_path):
    rec = tmp_path / "recorded"
    rec.mkdir()
    for number, code in KERNELS.items():
        for sample in (0, 1):
            (rec / f"level_1_problem_{number}_sample_{sample}_kernel.py").write_text(code)
    run_dir = tmp_path / "run"
    spec = f"replay:{rec}"
    cmd = [sys.executable, "-m", "agents.sweep", "--models", spec, "--device", "cpu", "--size", "small",
           "--turns", "1", "--run-dir", str(run_dir), "--build-workers", "1", "--no-progress", *FAST]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    attempts = run_dir / "attempts.jsonl"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            if attempts.exists() and len(_keys(attempts)) >= 2:
                break
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.2)
        else:
            raise AssertionError("no attempts recorded in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and every harness child it started
        proc.wait()
    before = _keys(attempts)
    assert 2 <= len(before) < 8, before

    r = subprocess.run([sys.executable, "-m", "agents.sweep", "--run-dir", str(run_dir), "--resume", "--no-progress"],
                       cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr + r.stdout
    after = _keys(attempts)
    expected = {(spec, "one_shot", f"level1/{n}_{name}", s, 1)
                for n, name in ((19, "ReLU"), (20, "LeakyReLU"), (21, "Sigmoid"), (22, "Tanh")) for s in (0, 1)}
    assert len(after) == len(set(after)), "duplicated attempts"
    assert set(after) == expected, "lost or unexpected attempts"
    assert set(before) <= set(after)
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["models"] == [spec] and saved["turns"] == 1 and saved["resume"] is True
