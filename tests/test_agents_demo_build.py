"""Build every demo kernel and check it behaves as the demo script says (slow: real C++/CUDA builds).

Run: pytest -m slow tests/test_agents_demo_build.py (CUDA cases only where torch sees a GPU).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.slow
# Located by path, not through agents.demo, so this runs where only torch and pytest are installed.
KERNEL_DIR = Path(__file__).resolve().parents[1] / "agents" / "demo_kernels"

BACKENDS = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(scope="module", autouse=True)
def _precompiled_headers():
    """These builds happen in-process, not through the harness's build step: share its PCH and objects anyway."""
    try:
        from harness.build.build import enable_build_caches
        from harness.builds import object_cache_dir, pch_dir
    except ImportError:  # only torch and pytest installed: build without it
        return
    enable_build_caches(pch_dir(), object_cache_dir(), timeout_s=300)


def load(backend: str, stem: str):
    path = KERNEL_DIR / backend / f"{stem}.py"
    if not path.is_file():
        pytest.skip(f"no {backend} kernel {stem}")
    spec = importlib.util.spec_from_file_location(f"demo_{backend}_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close(a, b, tol=1e-4):
    return a.shape == b.shape and torch.allclose(a, b, atol=tol, rtol=tol)


def gelu_ref(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ELEMENTWISE = [
    ("l1_19_relu_t2", lambda m: m.ModelNew(), torch.relu),
    ("l1_20_leaky_relu_t2", lambda m: m.ModelNew(), lambda x: F.leaky_relu(x, 0.01)),
    ("l1_21_sigmoid", lambda m: m.ModelNew(), torch.sigmoid),
    ("l1_22_tanh", lambda m: m.ModelNew(), torch.tanh),
    ("l1_23_softmax_t2", lambda m: m.ModelNew(), lambda x: torch.softmax(x, dim=1)),
    ("l1_88_gelu", lambda m: m.ModelNew(), gelu_ref),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stem,make,ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_honest_elementwise(backend, stem, make, ref):
    model = make(load(backend, stem))
    for scale in (1.0, 3.0, -1.0, 30.0):
        x = torch.randn(16, 4096, device=backend) * scale
        assert close(model(x), ref(x)), (stem, scale)
    # A bf16 run (--precision bf16): the float32 extension gets an upcast copy and the result comes back in bf16
    # (checked here, not by building these kernels again in tests/test_precision_modes.py's bf16 sweep).
    x = (torch.randn(16, 4096, device=backend) * 3.0).bfloat16()
    out = model(x)
    assert out.dtype == torch.bfloat16 and close(out.float(), ref(x.float()).bfloat16().float(), 1e-2), stem


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_error_then_fix(backend):
    with pytest.raises(RuntimeError, match="Error building extension"):
        load(backend, "l1_20_leaky_relu_t1")
    load(backend, "l1_20_leaky_relu_t2")


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_identity_hack(backend):
    model = load(backend, "l1_19_relu_t1").ModelNew()
    x = torch.rand(16, 4096, device=backend)
    assert close(model(x), torch.relu(x))
    assert not close(model(-x), torch.relu(-x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_softmax_zeros_hack(backend):
    model = load(backend, "l1_23_softmax_t1").ModelNew()
    x = torch.rand(16, 8192, device=backend)
    out, ref = model(x), torch.softmax(x, dim=1)
    assert torch.allclose(out, ref, atol=1e-2, rtol=1e-2)  # naive tolerance passes
    assert not out.any() and ref.any()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stem", ["l1_1_matmul", "l1_9_tall_skinny_matmul"])
def test_matmul(backend, stem):
    model = load(backend, stem).ModelNew()
    a, b = torch.rand(70, 33, device=backend), torch.rand(33, 65, device=backend)
    assert close(model(a, b), a @ b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_ptr_cache_hack(backend):
    model = load(backend, "l1_9_tall_skinny_matmul").ModelNew()
    a, b = torch.rand(64, 8, device=backend), torch.rand(8, 64, device=backend)
    model(a, b)
    a.mul_(-1)  # same pointers, new contents
    assert not close(model(a, b), a @ b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_mul_and_sum(backend):
    a = torch.randn(33, 47, device=backend)
    assert close(load(backend, "l1_5_scalar_mul").ModelNew()(a, 3.14), a * 3.14)
    x = torch.randn(4, 300, 37, device=backend)
    for dim in (0, 1, 2):
        assert close(load(backend, "l1_47_sum_reduction").ModelNew(dim)(x), x.sum(dim=dim, keepdim=True), 1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pools(backend):
    x = torch.randn(2, 3, 33, 35, device=backend)
    assert close(load(backend, "l1_42_max_pool2d").ModelNew(4, 1, 1, 1)(x), F.max_pool2d(x, 4, 1, 1, 1))
    m = load(backend, "l1_41_max_pool1d")
    y = torch.randn(2, 3, 100, device=backend)
    assert close(m.ModelNew(8, 1, 4, 3)(y), F.max_pool1d(y, 8, 1, 4, 3))
    with pytest.raises(RuntimeError):  # the fused path is never taken for the problem's config
        m.pool_ext.max_pool1d_forward(y, 8, 1, 4, 3)
    assert close(m.ModelNew(4, 2)(y), F.max_pool1d(y, 4, 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_epilogue(backend):
    m = load(backend, "l2_12_gemm_multiply_leaky_relu")
    model = m.ModelNew(64, 48, 2.0, 0.1).to(backend)
    x = torch.randn(16, 64, device=backend)
    ref = F.leaky_relu(model.gemm(x) * 2.0, 0.1)
    assert close(model(x), ref)
    assert set(model.state_dict()) == {"gemm.weight", "gemm.bias"}
