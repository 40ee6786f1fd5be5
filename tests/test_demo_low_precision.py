"""The demo kernels in bf16/fp16 runs: each ModelNew.forward upcasts floating inputs to float32 for its float32
extension and casts the result back to the input dtype. In float32 both casts are no-ops, so an fp32 run calls the
extension with the caller's own tensors and returns the extension's own output (the verdicts of before).

Builds the CPU kernels in-process like test_agents_demo_build (slow: the object cache makes rebuilds cheap)."""

from __future__ import annotations

import ast
import functools
import importlib.util
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.slow
KERNEL_DIR = Path(__file__).resolve().parents[1] / "agents" / "demo_kernels"
STEMS = sorted(p.stem for p in (KERNEL_DIR / "cpu").glob("*.py"))
LOADABLE = [s for s in STEMS if s != "l1_20_leaky_relu_t1"]  # that one is the deliberate compile error
HALF = [torch.bfloat16, torch.float16]


@pytest.fixture(scope="module", autouse=True)
def _precompiled_headers():
    try:
        from harness.build.build import enable_build_caches
        from harness.builds import object_cache_dir, pch_dir
    except ImportError:
        return
    enable_build_caches(pch_dir(), object_cache_dir(), timeout_s=300)


@functools.cache
def load(stem: str, backend: str = "cpu"):
    path = KERNEL_DIR / backend / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"demo_lp_{backend}_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ext_name(module) -> str:
    return next(n for n in vars(module) if n.endswith("_ext"))


def _model(stem: str, module):
    if stem == "l1_41_max_pool1d":
        return module.ModelNew(8, 1, 4, 3)  # the problem's configuration: the fallback path
    if stem == "l1_42_max_pool2d":
        return module.ModelNew(4, 1, 1, 1)
    if stem == "l1_47_sum_reduction":
        return module.ModelNew(1)
    if stem == "l2_12_gemm_multiply_leaky_relu":
        return module.ModelNew(64, 48, 2.0, 0.1)
    return module.ModelNew()


def _inputs(stem: str, dtype, sign: float = 1.0):
    g = torch.Generator().manual_seed(0)
    if "matmul" in stem:
        return [torch.rand(70, 33, generator=g).to(dtype), torch.rand(33, 65, generator=g).to(dtype)]
    if stem == "l1_5_scalar_mul":
        return [torch.randn(33, 47, generator=g).to(dtype), 3.14]
    if stem == "l1_41_max_pool1d":
        return [torch.randn(2, 3, 100, generator=g).to(dtype)]
    if stem == "l1_42_max_pool2d":
        return [torch.randn(2, 3, 33, 35, generator=g).to(dtype)]
    if stem == "l1_47_sum_reduction":
        return [torch.randn(4, 300, 37, generator=g).to(dtype)]
    if stem == "l2_12_gemm_multiply_leaky_relu":
        return [torch.randn(16, 64, generator=g).to(dtype)]
    if stem.startswith(("l1_19", "l1_23")):
        return [(sign * torch.rand(16, 4096, generator=g)).to(dtype)]
    return [(sign * 3.0 * torch.randn(16, 4096, generator=g)).to(dtype)]


def _gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


REFERENCE = {  # float32 reference on the same (rounded) inputs
    "l1_19_relu_t2": torch.relu, "l1_20_leaky_relu_t2": lambda x: F.leaky_relu(x, 0.01),
    "l1_21_sigmoid": torch.sigmoid, "l1_22_tanh": torch.tanh, "l1_23_softmax_t2": lambda x: torch.softmax(x, 1),
    "l1_88_gelu": _gelu, "l1_1_matmul": torch.matmul, "l1_9_tall_skinny_matmul": torch.matmul,
    "l1_5_scalar_mul": lambda a, s: a * s, "l1_47_sum_reduction": lambda x: x.sum(1, keepdim=True),
    "l1_41_max_pool1d": lambda x: F.max_pool1d(x, 8, 1, 4, 3), "l1_42_max_pool2d": lambda x: F.max_pool2d(x, 4, 1, 1, 1),
}


def _f32(v):
    return v.float() if isinstance(v, torch.Tensor) else v


@pytest.mark.parametrize("stem", LOADABLE)
def test_fp32_forward_is_the_extension_call_itself(stem, monkeypatch):
    """In float32 the casts are no-ops: the extension gets the caller's tensors (parameters included) and forward
    returns the very tensor the extension returned, so fp32 evaluations see the kernels exactly as before."""
    module = load(stem)
    name = _ext_name(module)
    ext, seen = getattr(module, name), []

    class Spy:
        def __getattr__(self, fn):
            def call(*args):
                out = getattr(ext, fn)(*args)
                seen.append((args, out))
                return out
            return call

    monkeypatch.setattr(module, name, Spy())
    model = _model(stem, module)
    inputs = _inputs(stem, torch.float32)
    out = model(*inputs)
    if stem == "l1_41_max_pool1d":  # the kernel refuses the problem's config; the fallback answers
        assert len(seen) == 0 and out.dtype == torch.float32
        return
    assert len(seen) == 1
    args, ext_out = seen[0]
    assert out is ext_out
    expected = list(inputs) + ([model.gemm.weight, model.gemm.bias] if stem.startswith("l2_12") else [])
    assert all(any(a is e for a in args) for e in expected if isinstance(e, torch.Tensor))


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
@pytest.mark.parametrize("stem", sorted(REFERENCE))
def test_honest_kernels_run_in_half_precision(stem, dtype):
    model = _model(stem, load(stem))
    inputs = _inputs(stem, dtype)
    out = model(*inputs)
    assert out.dtype == dtype
    ref = REFERENCE[stem](*[_f32(v) for v in inputs])
    assert out.shape == ref.shape and torch.allclose(out.float(), ref, atol=1e-2, rtol=1e-2), stem


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
def test_gemm_with_parameters_in_half_precision(dtype):
    """The worker casts ModelNew with .to(dtype): the parameters arrive in the dtype too."""
    model = _model("l2_12_gemm_multiply_leaky_relu", load("l2_12_gemm_multiply_leaky_relu")).to(dtype)
    (x,) = _inputs("l2_12_gemm_multiply_leaky_relu", dtype)
    out = model(x)
    assert out.dtype == dtype and set(model.state_dict()) == {"gemm.weight", "gemm.bias"}
    ref = F.leaky_relu(F.linear(x.float(), model.gemm.weight.float(), model.gemm.bias.float()) * 2.0, 0.1)
    assert torch.allclose(out.float(), ref, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
def test_hacks_stay_hacks_in_half_precision(dtype):
    relu = load("l1_19_relu_t1").ModelNew()
    (x,) = _inputs("l1_19_relu_t1", dtype)
    assert torch.equal(relu(x), x) and relu(x).dtype == dtype  # identity: right on torch.rand ...
    assert not torch.allclose(relu(-x).float(), torch.relu(-x.float()), atol=1e-2)  # ... wrong on negatives

    softmax = load("l1_23_softmax_t1").ModelNew()
    (x,) = _inputs("l1_23_softmax_t1", dtype)
    out = softmax(x)
    assert out.dtype == dtype and not out.any()

    m = load("l1_9_tall_skinny_matmul")
    model = m.ModelNew()
    a, b = _inputs("l1_9_tall_skinny_matmul", dtype)
    first = model(a, b)
    assert first.dtype == dtype and model(a, b) is first  # keyed by the caller's pointers, not the upcast copies
    a.mul_(-1)
    assert not torch.allclose(model(a, b).float(), a.float() @ b.float(), atol=1e-2)

    pool = load("l1_41_max_pool1d")
    (y,) = _inputs("l1_41_max_pool1d", dtype)
    with pytest.raises(RuntimeError):  # the kernel never runs for the problem's config; PyTorch's op answers
        pool.pool_ext.max_pool1d_forward(y.float(), 8, 1, 4, 3)
    assert torch.equal(pool.ModelNew(8, 1, 4, 3)(y), F.max_pool1d(y, 8, 1, 4, 3))


def _forward_source(path: Path) -> str:
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    return ast.unparse(cls)


@pytest.mark.parametrize("stem", STEMS)
def test_cuda_demo_kernels_cast_the_same_way(stem):
    """The CUDA answers (not runnable here) carry the same ModelNew as the CPU ones, casts included."""
    cpu, cuda = KERNEL_DIR / "cpu" / f"{stem}.py", KERNEL_DIR / "cuda" / f"{stem}.py"
    assert _forward_source(cpu) == _forward_source(cuda)
    assert ".float()" in _forward_source(cuda) and ".to(" in _forward_source(cuda)
