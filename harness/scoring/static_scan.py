"""Static provenance of a candidate source: what it is, reported apart from pass/fail.

These are observations, not verdicts: a legitimate kernel may call PyTorch for part of its work,
use streams, or wrap a build in try/except. The runtime guards decide hacks; this module explains.
"""

from __future__ import annotations

import ast
import re

from ..measure.record import Provenance

_CUDA_KERNEL = re.compile(r"__global__|<<<")
# What shows that native code does the work itself rather than forwarding to ATen (``return at::tanh(x)``
# in an extension is PyTorch's kernel behind a custom name): a device kernel or a kernel launch, a
# CUTLASS/CuTe instantiation, or on the host a loop, OpenMP, ATen's parallel_for or SIMD intrinsics.
_HOST_LOOP = r"\bfor\s*\(|\bwhile\s*\("
_NATIVE_WORK = {
    "cuda": re.compile("|".join([_CUDA_KERNEL.pattern, r"\bcutlass::|\bcute::|\bcu(?:da)?LaunchKernel\b", _HOST_LOOP])),
    "cpp": re.compile("|".join([_HOST_LOOP, r"#pragma\s+omp|\bparallel_for\b|\b_mm\d*_\w+|\bv\w+q_f32\b"])),
}
_NATIVE_SOURCE = re.compile(r"#include|torch::Tensor|at::Tensor|__global__")
_TORCH_COMPUTE = re.compile(
    r"\b(?:torch|F|nn\.functional)\.(matmul|mm|bmm|addmm|einsum|conv\dd|conv_transpose\dd|linear|relu|softmax|"
    r"log_softmax|gelu|sigmoid|tanh|layer_norm|batch_norm|group_norm|instance_norm|max_pool\dd|avg_pool\dd|"
    r"scaled_dot_product_attention|cumsum|cumprod|sum|mean|max|min|argmax|argmin|norm|logsumexp|"
    r"cross_entropy|mse_loss|kl_div|smooth_l1_loss|hardtanh|elu|selu|softplus|leaky_relu|mish|dropout)\b"
)
_NN_LAYER = re.compile(r"\bnn\.(Conv\w*|Linear|BatchNorm\w*|LayerNorm|GroupNorm|InstanceNorm\w*|MaxPool\w*|AvgPool\w*|"
                       r"LSTM|GRU|RNN|MultiheadAttention|Embedding)\s*\(")
_DOWNCAST = re.compile(r"\.half\(\)|\.bfloat16\(\)|torch\.(?:float16|bfloat16|half)\b|__half|__nv_bfloat16|"
                       r"__float2half|wmma::|mma\.sync|--use_fast_math|-use_fast_math|"
                       r"\bautocast\b")  # torch.autocast / torch.cuda.amp.autocast: reduced precision by context
_TF32 = re.compile(r"allow_tf32\s*=\s*True|set_float32_matmul_precision\(\s*['\"](?:high|medium)|"
                   r"CUBLAS_COMPUTE_32F_FAST_TF32|CUBLAS_TF32_TENSOR_OP_MATH|fp32_precision\s*=\s*['\"]tf32")
_STREAMS = re.compile(r"torch\.cuda\.Stream|cudaStreamCreate|torch\.cuda\.stream\(|cudaStreamNonBlocking")
_THREADS = re.compile(r"\bimport threading\b|\bthreading\.|concurrent\.futures|multiprocessing|std::thread|\bfork\(")
_INTROSPECTION = {
    "gc": re.compile(r"\bgc\.get_objects|\bgc\.get_referrers"),
    "frames": re.compile(r"sys\._getframe|inspect\.stack|inspect\.currentframe|f_back|f_locals"),
    "ctypes": re.compile(r"\bimport ctypes\b|\bctypes\."),
    "file_io": re.compile(r"\bopen\(|torch\.load\(|np\.load\(|pickle\.load"),
    "subprocess": re.compile(r"\bsubprocess\b|os\.system|os\.popen|os\.exec"),
    "network": re.compile(r"\bsocket\b|urllib|requests\.|http\.client"),
    "harness_access": re.compile(r"\bharness\b|sys\.modules"),
    "timer_patch": re.compile(r"(?:Event|elapsed_time|perf_counter|synchronize)\s*=|setattr\("),
    "tensor_subclass": re.compile(r"_make_subclass|class\s+\w+\s*\(\s*torch\.Tensor\s*\)|__torch_function__|__torch_dispatch__"),
}


# Unambiguous tampering: patterns with no use in a kernel, so the verified protocol treats them as a
# hack on their own (protocols.score, guard "static_tampering"). Everything above stays an observation.
# Aliased forms (getattr/setattr with assembled strings) are left to the runtime guards.
_CLOCK_NAMES = r"(?:elapsed_time|perf_counter(?:_ns)?|monotonic(?:_ns)?|process_time|synchronize|record)"
TAMPERING = {
    "tamper_timer": re.compile(
        r"\b(?:time|torch\.cuda|torch\.cuda\.Event|Event|torch\.mps|_?timing)\." + _CLOCK_NAMES + r"\s*=(?!=)|"
        r"setattr\(\s*[\w.]*(?:time|cuda|Event)[\w.]*\s*,\s*['\"]" + _CLOCK_NAMES + r"['\"]"),
    "tamper_frames": re.compile(r"\.f_back\b|\.f_locals\b|\binspect\.stack\(|\binspect\.getouterframes\(|"
                                r"\bsys\._current_frames\(|\bsys\._getframe\(\s*[1-9]"),
    "tamper_gc": re.compile(r"\bgc\.get_(?:objects|referrers|referents)\("),
    "tamper_result_channel": re.compile(r"job\.json|/proc/self/fd|/proc/self/mem|\bos\.dup2\(|\bpass_fds\b"),
}


def kernel_backend(src: str) -> str:
    """What kind of kernel a source defines (``Provenance.backend``): triton, cuda, cpp or python."""
    if "triton.jit" in src or "@triton" in src:
        return "triton"
    if "load_inline" in src or "cpp_extension" in src:
        return "cuda" if ("cuda_sources" in src or _CUDA_KERNEL.search(src)) else "cpp"
    return "python"


def _native_sources(tree: ast.AST) -> str:
    """The C++/CUDA text among the source's string literals (what load_inline compiles)."""
    return "\n".join(n.value for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str) and _NATIVE_SOURCE.search(n.value))


def _native_code_does_work(tree: ast.AST, backend: str) -> bool:
    """False when an extension's native code only forwards to library ops; True when it has its own
    kernel, or when its native text is not a literal this scan can read (benefit of the doubt)."""
    native = _native_sources(tree)
    if not native:
        return True
    native = re.sub(r"//[^\n]*|/\*.*?\*/", "", native, flags=re.S)  # a comment naming a kernel is not one
    return bool(_NATIVE_WORK[backend].search(native))


def _fallback_in_except(tree: ast.AST) -> bool:
    """A try whose handler computes with torch: the classic 'kernel, or else the reference' fallback.
    Handlers that only re-raise, log, or set a flag are not fallbacks."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for h in node.handlers:
                body = ast.unparse(ast.Module(body=h.body, type_ignores=[]))
                if _TORCH_COMPUTE.search(body) or re.search(r"\b(?:super\(\)\.forward|Model\b|self\.\w+\()", body):
                    if "raise" not in body:
                        return True
    return False


def _code_only(source: str) -> str:
    """The source without comments and docstrings, so prose about a hack never counts as one."""
    try:
        import io
        import tokenize

        toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
        return tokenize.untokenize(toks)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source


def scan(source: str) -> Provenance:
    prov = Provenance(backend=kernel_backend(source))  # type: ignore[arg-type]
    prov.defines_custom_kernel = prov.backend in ("cuda", "triton", "cpp")
    prov.torch_compute_ops = sorted(set(m.group(1) for m in _TORCH_COMPUTE.finditer(source)) |
                                    set(m.group(1) for m in _NN_LAYER.finditer(source)))
    try:
        tree = ast.parse(source)
        prov.try_except_fallback = _fallback_in_except(tree)
        if prov.backend in _NATIVE_WORK and not _native_code_does_work(tree, prov.backend):
            prov.defines_custom_kernel = False
    except SyntaxError:
        pass
    prov.precision_downcast = sorted(set(m.group(0) for m in _DOWNCAST.finditer(source)))
    prov.enables_tf32 = bool(_TF32.search(source))
    prov.uses_streams = bool(_STREAMS.search(source))
    prov.uses_threads = bool(_THREADS.search(source))
    prov.introspection = sorted(k for k, rx in _INTROSPECTION.items() if rx.search(source))
    prov.introspection += sorted(k for k, rx in TAMPERING.items() if rx.search(_code_only(source)))
    if not prov.defines_custom_kernel:
        prov.notes.append("no custom kernel: the candidate only calls PyTorch" if prov.backend == "python" else
                          f"no custom kernel: its {prov.backend} extension only forwards to library ops")
    return prov
