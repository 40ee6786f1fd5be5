"""Issue 20, item 5: what a newcomer meets first. A device this host cannot run fails at once with one line;
a candidate's syntax error reads as its SyntaxError, not the harness's traceback; reasons are never cut
mid-word; piping a listing into ``head`` ends quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.scoring.reasons import clip, error_summary

ROOT = Path(__file__).resolve().parent.parent
NO_GPU = not __import__("torch").cuda.is_available()


def run(args: list[str], tmp_path: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={**os.environ, "KV_CACHE_DIR": str(tmp_path / "cache")})


def one_line_error(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in out.stderr, out.stderr
    return lines[0]


@pytest.mark.parametrize("device", ["tpu", pytest.param("cuda", marks=pytest.mark.skipif(not NO_GPU, reason="a GPU"))])
def test_unusable_device_fails_before_any_work(tmp_path, device):
    kernel = tmp_path / "k.py"
    kernel.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    line = one_line_error(run(["harness.eval", str(kernel), "--problem", "1/19", "--device", device], tmp_path, 60))
    assert device in line
    run_dir = tmp_path / "run"
    line = one_line_error(run(["agents.sweep", "--models", "demo", "--device", device, "--run-dir", str(run_dir),
                               "--no-progress"], tmp_path, 60))
    assert device in line
    assert not run_dir.exists()  # nothing started, nothing written


def test_syntax_error_reason_is_the_candidates_syntax_error(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x)\n        return x\n")
    out = run(["harness.eval", str(kernel), "--problem", "1/19", "--quick", "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    for res in json.loads(out.stdout)["protocols"].values():
        assert res["verdict"] == "compile_error"
        reason = res["reasons"][0]
        assert "SyntaxError: expected ':'" in reason and "candidate line 3: def forward(self, x)" in reason
        assert "Traceback" not in reason and "worker.py" not in reason


def test_no_model_new_reason_is_whole(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("import torch\nclass Model2(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    out = run(["harness.eval", str(kernel), "--problem", "1/19", "--quick"], tmp_path)
    assert out.returncode == 0, out.stderr
    reasons = [ln for ln in out.stdout.splitlines() if ln.startswith("    - ")]
    assert len(reasons) == 2
    assert all(ln.endswith("AttributeError: the candidate defines no class ModelNew") for ln in reasons), reasons


def test_clip_cuts_at_a_word_boundary():
    text = "the candidate defines no class ModelNew " * 10
    short = clip(text, 60)
    assert len(short) <= 60 and short.endswith("…")
    assert text.startswith(short[:-1]) and text[len(short) - 1] == " "  # cut where a word ended
    assert clip("short", 60) == "short"


def test_error_summary_of_a_build_names_the_compiler_error():
    tb = ("Traceback (most recent call last):\n  File \"/x/harness/build/build.py\", line 9, in main\n    build()\n"
          "/tmp/ext/main.cpp:12:5: error: 'foo' was not declared in this scope\n"
          "RuntimeError: Error building extension 'k'\n")
    s = error_summary(tb)
    assert s.startswith("RuntimeError: Error building extension 'k'")
    assert "first compiler error: /tmp/ext/main.cpp:12:5: error: 'foo' was not declared in this scope" in s


@pytest.mark.parametrize("args", [["problems", "list", "--json"], ["problems", "list"], ["agents.report", "RUN", "--json"]])
def test_piping_into_head_prints_no_traceback(tmp_path, args):
    if "RUN" in args:
        from agents.report.synthetic import write_synthetic_run

        write_synthetic_run(tmp_path / "run")
        args = [str(tmp_path / "run") if a == "RUN" else a for a in args]
    proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout.readline()
    proc.stdout.close()  # what head does after its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_readme_problems_usage_is_the_real_cli(tmp_path, capsys):
    """Issue 20, item 7: the README put --problems-dir after `list`, where the CLI refuses it."""
    import re

    from problems.__main__ import main

    readme = (ROOT / "README.md").read_text()
    usage = re.search(r"`python -m problems (\[--problems-dir PATH\] )?list[^`]*`", readme)
    assert usage and usage.group(1), "README's `problems list` usage must put --problems-dir before `list`"
    ext = tmp_path / "kb" / "level1"
    ext.mkdir(parents=True)
    (ext / "19_ReLU.py").write_text((ROOT / "problems" / "level1" / "19_ReLU.py").read_text())
    assert main(["--problems-dir", str(tmp_path / "kb"), "list"]) == 0
    assert "19_ReLU" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["list", "--problems-dir", str(tmp_path / "kb")])


def test_readme_documents_the_no_code_status():
    readme = (ROOT / "README.md").read_text()
    verdicts = readme[readme.index("Verdicts: `correct`"):][:900]
    assert "`no_code`" in verdicts
