"""Issue 33: the sweep CLI checks all its input before it writes anything. A start that fails exits 2 with one
line and leaves no run directory (and an existing one as it was); --force starts over, --resume refuses a
changed plan. None of these evaluates a kernel: each fails (or is checked) before the run starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.config import SweepConfig
from agents.sweep import SweepError, check_eval_settings, prepare, settle

ROOT = Path(__file__).resolve().parent.parent
DEMO = ["--models", "demo", "--device", "cpu", "--size", "small", "--no-progress"]


def sweep(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agents.sweep", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={**os.environ, "KV_CACHE_DIR": str(tmp_path / "cache")})


def one_line_error(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir())}


def saved_run(run_dir: Path, **kw) -> dict[str, bytes]:
    """A run directory as a start leaves it (config.json and one attempts line), written through the API."""
    _, store, _ = prepare(SweepConfig(models=["demo"], device="cpu", size="small", run_dir=run_dir,
                                      problems=["1/19"], turns=1, **kw))
    (store.dir / "attempts.jsonl").write_text('{"torn": \n')
    return snapshot(run_dir)


@pytest.mark.parametrize("args, words", [
    (["--eval-set", "verified_seconds_per_subject=abc"], ["verified_seconds_per_subject=abc", "number"]),
    (["--problems", "1/999"], ["--problems", "1/999"]),
    (["--problems-dir", "/nonexistent"], ["--problems-dir", "/nonexistent", "no such directory"]),
    (["--levels", "9"], ["--levels 9", "no such level"]),
    (["--eval-set", "verifed_seconds_per_subject=2"], ["verifed_seconds_per_subject", "did you mean",
                                                       "verified_seconds_per_subject"]),
    (["--eval-set", "naive_trials"], ["--eval-set naive_trials", "KEY=VALUE"]),
])
def test_bad_input_fails_before_the_run_dir_exists(tmp_path, args, words):
    run_dir = tmp_path / "run"
    line = one_line_error(sweep(*DEMO, "--run-dir", str(run_dir), *args, tmp_path=tmp_path))
    assert all(w in line for w in words), line
    assert not run_dir.exists()


def test_bad_input_leaves_an_existing_run_as_it_was(tmp_path):
    run_dir = tmp_path / "run"
    before = saved_run(run_dir)
    for args in (["--force", "--problems", "1/999"], ["--resume", "--eval-set", "nope=1"], ["--problems", "1/19"]):
        one_line_error(sweep(*DEMO, "--run-dir", str(run_dir), *args, tmp_path=tmp_path))
        assert snapshot(run_dir) == before, args


def test_a_failed_start_can_be_corrected_without_rm(tmp_path):
    """The old sweep wrote config.json before it checked the problems: the corrected command was refused."""
    run_dir = tmp_path / "run"
    one_line_error(sweep(*DEMO, "--run-dir", str(run_dir), "--problems", "1/999", tmp_path=tmp_path))
    config, _, tasks = prepare(SweepConfig(models=["demo"], device="cpu", size="small", run_dir=run_dir,
                                           problems=["1/19"], turns=1))
    assert [t.problem.id for t in tasks] == ["level1/19_ReLU"]
    assert json.loads((run_dir / "config.json").read_text())["problems"] == ["1/19"]


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_resume_without_a_run_is_one_line_and_creates_nothing(tmp_path, make):
    run_dir = tmp_path / "run"
    if make == "empty":
        run_dir.mkdir()
    line = one_line_error(sweep("--run-dir", str(run_dir), "--resume", "--no-progress", tmp_path=tmp_path))
    assert "nothing to resume" in line and str(run_dir) in line
    assert (run_dir.exists(), make == "empty") == (make == "empty", make == "empty")
    if make == "empty":
        assert not any(run_dir.iterdir())


@pytest.mark.parametrize("resume", [False, True])
def test_run_dir_that_is_a_file_is_one_line(tmp_path, resume):
    run_dir = tmp_path / "run"
    run_dir.write_text("not a run")
    line = one_line_error(sweep(*DEMO, "--run-dir", str(run_dir), *(["--resume"] if resume else []),
                                tmp_path=tmp_path))
    assert str(run_dir) in line and "is a file" in line
    assert run_dir.read_text() == "not a run"


def test_resume_refuses_a_changed_plan_naming_saved_and_given(tmp_path):
    run_dir = tmp_path / "run"
    before = saved_run(run_dir)
    line = one_line_error(sweep("--run-dir", str(run_dir), "--resume", "--problems", "1/20", "--turns", "5",
                                "--concurrency", "3", "--no-progress", tmp_path=tmp_path))
    assert "--problems saved 1/19, given 1/20" in line and "--turns saved 1, given 5" in line, line
    assert "concurrency" not in line  # an execution knob may change
    assert snapshot(run_dir) == before


def test_resume_accepts_the_saved_plan_and_execution_changes(tmp_path):
    run_dir = tmp_path / "run"
    saved_run(run_dir, eval_settings={"naive_trials": 2})
    config = settle(SweepConfig(models=["demo"], run_dir=run_dir, resume=True, problems=["level1/19_ReLU"],
                                turns=1, device="cpu", eval_settings={"naive_trials": 2}, concurrency=3))
    assert (config.concurrency, config.turns, config.problems) == (3, 1, ["1/19"])
    with pytest.raises(SweepError, match="--eval-set saved naive_trials=2, given naive_trials=3"):
        settle(SweepConfig(models=["demo"], run_dir=run_dir, resume=True, eval_settings={"naive_trials": 3}))


def test_force_starts_over_after_the_checks(tmp_path, capsys):
    run_dir = tmp_path / "run"
    saved_run(run_dir)
    (run_dir / "notes.txt").write_text("mine")
    config, _, _ = prepare(SweepConfig(models=["demo"], device="cpu", size="small", run_dir=run_dir,
                                       problems=["1/20"], force=True))
    assert "--force: starting" in capsys.readouterr().err
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.json", "notes.txt"]  # only run files removed
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["problems"] == ["1/20"] and "force" not in saved


def test_unknown_eval_setting_suggests_close_matches():
    with pytest.raises(SweepError, match="did you mean naive_trials"):
        check_eval_settings({"naive_trails": 2})
    check_eval_settings({"naive_trials": 2, "verified_seconds_per_subject": 1.5})


def test_help_says_where_eval_set_keys_come_from(tmp_path):
    out = sweep("--help", tmp_path=tmp_path)
    assert out.returncode == 0 and "harness.EvalSettings" in out.stdout and "--force" in out.stdout


def test_help_lists_every_eval_set_key_with_its_default_and_every_option_has_help(tmp_path):
    from agents.sweep import build_parser
    from harness.wire.job import EvalSettings

    text = " ".join(build_parser().format_help().split())  # argparse wraps at the terminal's width
    for key, field in EvalSettings.model_fields.items():
        if key != "precision":  # --precision sets it
            assert f"{key} [{field.default if field.default is not None else '-'}]" in text, key
    assert "--turns TURNS maximum turns per conversation (default: 3)" in text
    assert "--concurrency CONCURRENCY conversations in flight (default: 32)" in text
    assert "PydanticUndefined" not in text
    undocumented = [a.option_strings for a in build_parser()._actions if a.option_strings and not a.help]
    assert undocumented == []


def test_help_parses_without_importing_torch():
    """--help took 12-16 s on a loaded host: torch (through harness.runner) was imported before argparse ran."""
    code = ("import sys\nfrom agents.sweep import build_parser\n"
            "try:\n    build_parser().parse_args(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "[]", (out.stdout, out.stderr)


def test_resume_with_nothing_left_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    """A finished run resumed printed the earlier session's table as if it were this one's."""
    import agents.sweep as S
    from agents.progress import RunSummary

    run_dir = tmp_path / "run"
    saved_run(run_dir)
    done = RunSummary(run_dir=str(run_dir), wall_s=500.0, attempts=1, new_attempts=1)
    monkeypatch.setattr(S, "run_sweep", lambda config: done.model_copy(update={"idle": True, "wall_s": 0.1,
                                                                                "new_attempts": 0}))
    assert S.main(["--run-dir", str(run_dir), "--resume", "--no-progress"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("nothing to do:") and "500" not in out[0], out
    assert f"python -m agents.report {run_dir}" in out[0]


def test_resume_moves_a_torn_last_line_out_once(tmp_path, capsys):
    run_dir = tmp_path / "run"
    saved_run(run_dir)
    (run_dir / "attempts.jsonl").write_text('{"model": "demo", "strat')  # a kill mid-write
    resume = SweepConfig(models=["demo"], run_dir=run_dir, resume=True)
    prepare(resume)
    assert "line 1 was torn" in capsys.readouterr().err
    assert (run_dir / "attempts.jsonl").read_text() == "" and (run_dir / "attempts.torn").exists()
    prepare(resume)
    assert "torn" not in capsys.readouterr().err


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def test_ctrl_c_ends_what_the_sweep_started(tmp_path, monkeypatch, capsys):
    """A build in flight (its own session, out of reach of the terminal's SIGINT) kept an interrupted sweep alive
    until its compiler finished: after Ctrl-C the sweep kills its children's process groups, grandchildren too."""
    import signal
    import time

    import agents.sweep as S

    pids = tmp_path / "pids"
    # A "build": a session leader whose child (the "compiler") would run for minutes.
    build = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                              f"open({str(pids)!r}, 'w').write(str(c.pid))\ntime.sleep(600)\n"],
                             start_new_session=True)
    try:
        while not pids.exists() or not pids.read_text():
            assert build.poll() is None
            time.sleep(0.05)
        compiler = int(pids.read_text())

        def interrupted(config):
            raise KeyboardInterrupt

        monkeypatch.setattr(S, "run_sweep", interrupted)
        assert S.main(["--models", "demo", "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 130
        assert "interrupted; continue with --resume" in capsys.readouterr().err
        assert build.wait(timeout=60) == -signal.SIGKILL
        deadline = time.monotonic() + 60  # only a bound on the wait for init to reap it, not a speed limit
        while _alive(compiler) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(compiler), "the build's child outlived the interrupted sweep"
    finally:
        try:
            os.killpg(build.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        build.wait()
