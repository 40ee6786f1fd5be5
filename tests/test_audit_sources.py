"""python -m agents.audit RUN --sources DIR: a stripped run's kernels found by sha256 in a folder (the corpus laid out
again), so the judge reads exactly what was measured; a kernel not there, or whose recording changed, is listed and
skipped. On the synthetic run: two fast survivors at >= 1.2x, level1/88_MinGPTNewGelu (turn 1) and
level1/20_LeakyReLU (turn 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agents.audit import JUDGE_FILE, JudgeConfig, judge_run, read_judgements
from agents.audit.__main__ import main as cli
from agents.report.synthetic import write_synthetic_run
from agents.store import RunStore
from tests.fake_llm_server import Step, responses_body

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import strip_run  # noqa: E402

RESPONSES = "/v1/responses"
GELU, LEAKY = "level1/88_MinGPTNewGelu", "level1/20_LeakyReLU"


def answer(category: str) -> Step:
    return Step.json(responses_body(json.dumps({"category": category, "reason": "r"})))


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path, dict[str, str]]:
    """The synthetic run, its stripped copy (hashes only) and the two fast survivors' sources by problem."""
    write_synthetic_run(tmp_path / "full")
    n, hits = strip_run.strip_runs([tmp_path / "full"], tmp_path / "stripped")
    assert n and not hits
    sources = {a.problem_id: a.kernel_source for a in RunStore(tmp_path / "full")
               if a.problem_id in (GELU, LEAKY) and a.record and a.kernel_source}
    assert set(sources) == {GELU, LEAKY}
    assert all(a.kernel_source is None for a in RunStore(tmp_path / "stripped"))
    return tmp_path / "full", tmp_path / "stripped", sources


def judge(run: Path, spec: str, sources: Path | None, models_toml: Path | None = None):
    return judge_run(run, JudgeConfig(judge=spec, min_speedup=1.2, sources=sources, models_config=models_toml))


def test_found_by_hash_gives_the_unstripped_runs_prompts(llm_server, fast_models_toml, runs, tmp_path):
    full, stripped, src = runs
    llm_server.script(RESPONSES, answer("genuine_optimisation"), answer("genuine_optimisation"))
    judge(full, "gpt", None, fast_models_toml)
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text((full / JUDGE_FILE).read_text())
    folder = tmp_path / "corpus"
    (folder / "cuda-l1").mkdir(parents=True)
    # one as a bare kernel under a replay name (read as the sweep reads it), one as a raw response of any name
    (folder / "cuda-l1" / "level_1_problem_88_sample_0_kernel.py").write_text(src[GELU])
    (folder / "notes.txt").write_text(f"Here it is.\n```python\n{src[LEAKY]}```\n")

    run = judge(stripped, f"replay:{recorded}", folder)  # replay finds an answer only for the very same prompt
    assert {(e.problem_id, e.status, e.category) for e in run.entries} == {
        (GELU, "judged", "genuine_optimisation"), (LEAKY, "judged", "genuine_optimisation")}
    assert {e.problem_id: Path(e.source_file).name for e in run.entries} == {
        GELU: "level_1_problem_88_sample_0_kernel.py", LEAKY: "notes.txt"}
    assert f"--sources {folder}: 2 of 2 stripped fast survivor(s) found by sha256" in run.notes
    assert len(llm_server.requests_to(RESPONSES)) == 2  # replay asked nothing
    # without --sources the same stripped run is skipped, and the note says what would find the kernels
    bare = judge(stripped, f"replay:{recorded}", None)
    assert [e.status for e in bare.entries] == ["skipped", "skipped"]
    assert any("--sources DIR finds them by hash" in n for n in bare.notes)


def test_missing_kernel_is_listed_and_skipped_not_asked(llm_server, fast_models_toml, runs, tmp_path, capsys):
    _, stripped, src = runs
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "gelu.py").write_text(src[GELU])
    llm_server.script(RESPONSES, answer("library_call_only"))
    assert cli([str(stripped), "--judge", "gpt", "--sources", str(folder), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"--sources {folder}: 1 of 2 stripped fast survivor(s) found by sha256" in out
    assert f"{LEAKY} sample 0 turn 2: kernel source not found: no file under {folder}" in out
    entries = {e.problem_id: e for e in read_judgements(stripped)}
    assert (entries[GELU].status, entries[GELU].category) == ("judged", "library_call_only")
    assert entries[LEAKY].status == "skipped" and "kernel source not found" in (entries[LEAKY].note or "")
    assert len(llm_server.requests_to(RESPONSES)) == 1  # the missing kernel was never sent


def test_changed_recording_is_a_hash_mismatch(llm_server, fast_models_toml, runs, tmp_path):
    _, stripped, src = runs
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "level_1_problem_88_sample_0_kernel.py").write_text(src[GELU])
    edited = folder / "level_1_problem_20_sample_0_turn_2_kernel.py"  # LEAKY's own recording, one line changed
    edited.write_text(src[LEAKY] + "# edited after the sweep\n")
    llm_server.script(RESPONSES, answer("unsure"))
    run = judge(stripped, "gpt", folder, fast_models_toml)
    by = {e.problem_id: e for e in run.entries}
    assert by[GELU].status == "judged"
    assert by[LEAKY].status == "skipped" and (by[LEAKY].note or "").startswith(f"hash mismatch: {edited} is this")
    assert any(n.startswith(f"{LEAKY} sample 0 turn 2: hash mismatch") for n in run.notes)
    assert len(llm_server.requests_to(RESPONSES)) == 1


def test_a_stored_source_wins_over_the_folder(llm_server, fast_models_toml, runs, tmp_path):
    full, _, _ = runs
    folder = tmp_path / "empty"
    folder.mkdir()
    llm_server.script(RESPONSES, answer("unsure"), answer("unsure"))
    run = judge(full, "gpt", folder, fast_models_toml)
    assert [e.status for e in run.entries] == ["judged", "judged"] and all(not e.source_file for e in run.entries)
    assert f"--sources {folder}: 0 of 0 stripped fast survivor(s) found by sha256" in run.notes


def test_sources_not_a_directory_is_one_line(runs, tmp_path, capsys):
    _, stripped, _ = runs
    assert cli([str(stripped), "--judge", "gpt", "--sources", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err
    assert not (stripped / JUDGE_FILE).exists()
