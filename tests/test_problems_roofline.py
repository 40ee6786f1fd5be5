"""Roofline counts equal hand-computed values, at full size, without allocating anything."""

import json
import subprocess
import sys
from pathlib import Path

import problems
from problems.roofline import count

ROOT = Path(__file__).resolve().parent.parent


def test_matmul_counts():
    c = count(problems.load("1/1"), "full")  # C = A @ B, 4096^3
    n = 4096
    assert c.matmul_flops == 2 * n**3
    assert c.bytes == 3 * n * n * 4


def test_conv3d_counts():
    c = count(problems.load("level1/54_conv_standard_3D__square_input__square_kernel"), "full")
    out_elems = 16 * 64 * 62 * 62 * 62  # batch, out channels, (64 - 3 + 1)^3
    assert c.matmul_flops == 2 * (3 * 3 * 3 * 3) * out_elems  # 2 x (C_in x k^3) MACs per output element
    assert c.parameter_bytes == 64 * 3 * 27 * 4
    assert c.bytes == (16 * 3 * 64**3 + out_elems) * 4 + 64 * 3 * 27 * 4


def test_reduction_counts():
    c = count(problems.load("1/47"), "full")  # sum over dim 1 of [128, 4096, 4095], keepdim
    assert c.matmul_flops == 0
    assert c.elementwise_flops == 128 * 4096 * 4095
    assert c.bytes == (128 * 4096 * 4095 + 128 * 4095) * 4


def test_elementwise_counts():
    c = count(problems.load("1/19"), "small")  # ReLU over [64, 8192]
    assert c.flops == 64 * 8192
    assert c.bytes == 2 * 64 * 8192 * 4


def test_show_json_includes_shapes_and_roofline():
    out = subprocess.run([sys.executable, "-m", "problems", "show", "1/1", "--json"], capture_output=True,
                         text=True, cwd=ROOT, check=True)
    d = json.loads(out.stdout)
    assert d["inputs"][0] == {"name": "A", "shape": [4096, 4096], "dtype": "float32"}
    assert d["roofline"]["flops"] == 2 * 4096**3


def test_list_json_has_250_entries_with_ids():
    out = subprocess.run([sys.executable, "-m", "problems", "list", "--json"], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    items = json.loads(out.stdout)
    assert len(items) == 250
    assert {"id", "level", "number", "name"} <= set(items[0])
    assert items[18]["id"] == "level1/19_ReLU"


def test_small_preset_renders_a_real_kernelbench_file():
    p = problems.load("1/19")
    small = p.source("small")
    assert "batch_size = 64" in small and "dim = 8192" in small
    assert "def get_inputs" in small and "class Model" in small


def test_external_problems_dir(tmp_path):
    lvl = tmp_path / "level1"
    lvl.mkdir()
    (lvl / "19_ReLU.py").write_text(problems.load("1/19").full_source().replace("torch.rand(", "torch.randn("))
    ext = problems.load("1/19", problems_dir=tmp_path)
    assert ext.path.parent == lvl
    assert "torch.randn(" in ext.source()
    assert len(problems.list_problems(problems_dir=tmp_path)) == 1


def test_degenerate_flags_present():
    for pid in ("level2/23", "2/80", "2/83"):
        assert problems.load(pid.replace("level", "")).is_flagged("degenerate")
    assert problems.load("1/23").is_flagged("low_magnitude")
    assert problems.load("1/37").is_flagged("low_magnitude")
    assert problems.load("2/66").is_flagged("training_mode")
    assert problems.load("2/83").is_flagged("training_mode")


def test_an_external_file_without_metadata_takes_the_builtin_domains_and_flags(tmp_path):
    """A KernelBench checkout has no metadata.toml: its triangular-matrix product must still be fed triangular
    matrices (the 2026-12-02 H200 sweep fed full ones, and every honest kernel that skips the zero half failed)."""
    lvl = tmp_path / "level1"
    lvl.mkdir()
    for pid in ("1/14", "1/23"):
        src = problems.load(pid)
        (lvl / src.path.name).write_text(src.full_source())
    (lvl / "14_Some_other_workload.py").write_text(problems.load("1/19").full_source())
    tri = problems.load("level1/14_Matmul_for_upper_triangular_matrices", problems_dir=tmp_path)
    assert tri.domain("A") == "upper_triangular" and tri.domain("B") == "upper_triangular"
    assert tri.meta.borrowed_from == "level1/14_Matmul_for_upper_triangular_matrices"
    assert not tri.meta.small  # constants may differ from the built-in file's: no size preset is taken
    assert problems.load("level1/23_Softmax", problems_dir=tmp_path).is_flagged("low_magnitude")
    other = problems.load("level1/14_Some_other_workload", problems_dir=tmp_path)  # same number, another name
    assert other.domain("A") == "real" and other.meta.borrowed_from is None
