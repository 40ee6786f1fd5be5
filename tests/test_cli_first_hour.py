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
    assert capsys.readouterr().out.splitlines()[1].split() == ["1/19", "ReLU", "-"]
    with pytest.raises(SystemExit):
        main(["list", "--problems-dir", str(tmp_path / "kb")])


def test_readme_documents_the_no_code_status():
    readme = (ROOT / "README.md").read_text()
    verdicts = readme[readme.index("Verdicts: `correct`"):][:900]
    assert "`no_code`" in verdicts


# -- issue 33: input checked before any work; output that fits an 80-column terminal -----------------------------

def test_problems_list_has_a_header_and_fits_80_columns_without_cutting_names(tmp_path):
    out = subprocess.run([sys.executable, "-m", "problems", "list"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["id", "name", "flags"]
    assert max(map(len, lines)) <= 80
    from problems import list_problems

    # Each problem's rows put back together give its whole name and flags: wrapped only after '_' and ','.
    rows: dict[str, list[str]] = {}
    current = ""
    for line in lines[1:]:
        if not line.startswith(" "):
            current = line.split()[0]
        rows.setdefault(current, []).append(line)
    name_at = lines[0].index("name")
    flags_at = lines[0].index("flags")
    for p in list_problems():
        got = rows[f"{p.level}/{p.number}"]
        name = "".join(r[name_at:flags_at].strip() for r in got)
        flags = "".join(r[flags_at:].strip() for r in got)
        assert name == p.name.split("_", 1)[1] and flags == (",".join(f.kind for f in p.meta.flags) or "-"), got


@pytest.mark.parametrize("args, words", [
    (["list", "--level", "9"], ["--level 9", "no such level"]),
    (["--problems-dir", "/nonexistent", "list"], ["--problems-dir /nonexistent", "no such directory"]),
])
def test_problems_cli_refuses_what_does_not_exist(tmp_path, args, words):
    line = one_line_error(run(["problems", *args], tmp_path, 60))
    assert all(w in line for w in words), line


@pytest.mark.parametrize("args, words", [
    (["--problems-dir", "/nonexistent"], ["--problems-dir /nonexistent", "no such directory"]),
    (["--problem", "1/999"], ["1/999"]),
    (["--protocol", ","], ["--protocol", "names no protocol"]),
    (["--protocol", "navie"], ["navie", "naive"]),
])
def test_eval_cli_checks_every_argument_before_any_work(tmp_path, args, words):
    kernel = tmp_path / "k.py"
    kernel.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    base = ["--problem", "1/19"] if "--problem" not in args else []
    line = one_line_error(run(["harness.eval", str(kernel), *base, *args], tmp_path, 60))
    assert all(w in line for w in words), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.py"]  # no build cache started


def test_eval_timeout_too_short_for_the_reference_is_named_as_the_users(tmp_path, monkeypatch, capsys):
    """--timeout 1 read as a harness failure about reference outputs; it is the user's bound that ran out."""
    import harness.eval as E
    import harness.runner

    class NoEvaluator:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(harness.runner, "Evaluator", NoEvaluator)
    monkeypatch.setattr(E, "bounded_evaluate", lambda *a, **k: None)  # the reference was not ready in time
    kernel = tmp_path / "k.py"
    kernel.write_text("class ModelNew: pass\n")
    assert E.main([str(kernel), "--problem", "1/19", "--timeout", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "your --timeout 1 s ran out" in err[0] and "longer --timeout" in err[0], err
    assert "harness failed" not in err[0]


@pytest.mark.parametrize("module", ["agents.sweep", "agents.report.__main__", "harness.eval", "problems.__main__"])
def test_help_parses_before_torch_is_imported(module):
    """--help took 12-16 s on a loaded host: torch came in with the CLI's imports, before argparse ran."""
    code = (f"import sys, runpy\nsys.argv = ['x', '--help']\n"
            f"try:\n    runpy.run_module({module!r}, run_name='__main__')\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "print(sorted(m for m in ('torch', 'numpy', 'matplotlib', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]


def test_a_kernel_that_did_not_build_is_not_said_to_only_call_pytorch():
    from datetime import UTC, datetime

    from harness.eval import provenance_notes
    from harness.measure.record import MeasurementRecord
    from harness.scoring.static_scan import scan

    source = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x)\n        return x\n"
    prov = scan(source)
    assert any("only calls PyTorch" in n for n in prov.notes)  # the scan's claim, true of a source that runs
    rec = MeasurementRecord(candidate_hash="0" * 64, problem_id="level1/19_ReLU", size="small", device="cpu",
                            status="compile_error", failed_phase="build", error="SyntaxError",
                            created_at=datetime.now(UTC).isoformat(), provenance=prov)
    notes = provenance_notes(rec)
    assert not any("only calls PyTorch" in n or "custom kernel ran" in n for n in notes), notes
    assert "did not build" in notes[0]
    ok = rec.model_copy(update={"status": "ok", "failed_phase": None})
    assert any("only calls PyTorch" in n for n in provenance_notes(ok))
