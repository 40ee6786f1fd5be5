"""Rendering a strategy into chat messages (plain dicts: {"role": ..., "content": ...}).

    render("one_shot", problem, "small", "cuda")       -> [system, user]
    render_feedback("one_shot", feedback, "cuda")       -> user message for the next turn

The prompt shows the problem source at the size being evaluated. ``input_blind`` strategies show
it with ``get_inputs``/``get_init_inputs`` and the module-level constants removed, and describe the
forward arguments by rank and dtype only.
"""

from __future__ import annotations

import ast
import os
import platform
import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

import problems as P

from .strategy import BACKENDS_DIR, EXAMPLES_DIR, HARDWARE_FILE, TEMPLATES_DIR, Strategy, load_strategy

BACKENDS = ("cuda", "triton", "cpu")
DEFAULT_GPU = "H200"

Message = dict[str, str]


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


@lru_cache(maxsize=8)
def backend_info(backend: str) -> dict[str, Any]:
    path = BACKENDS_DIR / f"{backend}.toml"
    if not path.is_file():
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    return tomllib.loads(path.read_text())


# -- input-blind sources --------------------------------------------------------------------------

_HIDDEN_FUNCS = {"get_inputs", "get_init_inputs"}


def strip_inputs(source: str) -> str:
    """The source without get_inputs/get_init_inputs and without module-level constant assignments."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    for node in tree.body:
        hide = False
        if isinstance(node, ast.FunctionDef) and node.name in _HIDDEN_FUNCS:
            hide = True
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            hide = True
        if hide:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            drop.update(range(start - 1, node.end_lineno))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    text = "\n".join(kept)
    text = re.sub(r"\n{3,}", "\n\n\n", text).strip() + "\n"
    return text


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, tuple | list):
        inner = sorted({_type_name(v) for v in value})
        return f"{type(value).__name__} of {'/'.join(inner) or 'values'}"
    return type(value).__name__


FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def describe_inputs(problem: P.Problem, size: P.Size, precision: str = "fp32") -> tuple[list[dict[str, str]], list[str]]:
    """Forward arguments as rank and dtype only (floating ones in the run's dtype: ``harness.measure.precision``), and
    init arguments as name: type (no values)."""
    import inspect

    specs = P.input_specs(problem, size)
    low = _precision(precision)
    args = []
    for s in specs:
        if isinstance(s, P.TensorSpec):
            dtype = low["dtype"] if low and str(s.dtype).removeprefix("torch.") in FLOAT_DTYPES else s.dtype
            args.append({"name": s.name, "text": f"{dtype} tensor of rank {len(s.shape)}"})
        else:
            args.append({"name": s.name, "text": f"a Python {_type_name(s.value)}"})
    mod = P.load_module(problem, size)
    names = [p for p in inspect.signature(mod.Model.__init__).parameters if p != "self"]
    values = list(mod.get_init_inputs())
    init = [f"`{n}` ({_type_name(v)})" for n, v in zip(names, values, strict=False)]
    return args, init


# -- hardware and roofline -------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _devices() -> dict[str, dict[str, Any]]:
    return tomllib.loads(HARDWARE_FILE.read_text())


def list_hardware() -> list[str]:
    return sorted(_devices())


def _host_cpu() -> dict[str, str]:
    spec = {"Logical cores": str(os.cpu_count() or "?"), "Architecture": platform.machine()}
    try:
        info = Path("/proc/cpuinfo").read_text()
        if m := re.search(r"^model name\s*:\s*(.+)$", info, re.MULTILINE):
            spec["Model"] = m.group(1).strip()
        if m := re.search(r"^flags\s*:\s*(.+)$", info, re.MULTILINE):
            flags = set(m.group(1).split())
            simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "amx_tile") if f in flags]
            spec["SIMD"] = ", ".join(simd) or "baseline"
        if m := re.search(r"^cache size\s*:\s*(.+)$", info, re.MULTILINE):
            spec["Cache (per core, as reported)"] = m.group(1).strip()
    except OSError:
        pass
    return spec


def hardware_spec(name: str | None, backend: str) -> dict[str, Any]:
    """The spec sheet entry for ``name`` (matched against each entry's ``match``), or the backend's default."""
    devices = _devices()
    kind = backend_info(backend)["hardware_kind"]
    if name is None:
        name = "cpu" if kind == "cpu" else DEFAULT_GPU
    entry = devices.get(name) or next((v for v in devices.values() if v.get("match", "\0") in name), None)
    if entry is None:
        raise ValueError(f"no spec sheet for hardware {name!r}; known: {', '.join(sorted(devices))} "
                         f"(add one to {HARDWARE_FILE})")
    entry = dict(entry)
    spec = dict(entry.get("spec", {}))
    if entry.get("detect_host"):
        spec = {**_host_cpu(), **spec}
    entry["spec"] = spec
    return entry


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _time(ms: float) -> str:
    if ms >= 1:
        return f"{ms:.3g} ms"
    if ms >= 1e-3:
        return f"{ms * 1e3:.3g} us"
    return f"{ms * 1e6:.3g} ns"


def roofline_block(problem: P.Problem, size: P.Size, hw: dict[str, Any]) -> dict[str, str]:
    from problems.roofline import count

    c = count(problem, size)
    out = {
        "flops_text": _si(c.flops, "FLOP"),
        "matmul_text": _si(c.matmul_flops, "FLOP"),
        "bytes_text": _si(c.bytes, "B"),
        "intensity_text": f"{c.flops / c.bytes:.3g}" if c.bytes else "n/a",
        "t_sol_text": "",
        "bound": "",
    }
    fp32, tf32, bw = hw.get("peak_fp32_flops"), hw.get("peak_tf32_flops"), hw.get("peak_bandwidth")
    if fp32 and tf32 and bw:
        compute = max(c.matmul_flops / tf32, (c.flops - c.matmul_flops) / fp32)
        memory = c.bytes / bw
        out["t_sol_text"] = _time(max(compute, memory) * 1e3)
        out["bound"] = "compute" if compute > memory else "memory"
    return out


# -- rendering -------------------------------------------------------------------------------------

def _problem(problem: P.Problem | str, problems_dir: str | Path | None) -> P.Problem:
    return problem if isinstance(problem, P.Problem) else P.load(problem, problems_dir)


def _examples(strategy: Strategy, backend: str) -> list[dict[str, str]]:
    out = []
    for name in strategy.examples:
        folder = EXAMPLES_DIR / name
        solution = folder / f"{backend}.py"
        if not solution.is_file():
            continue  # an example without this backend is skipped, not an error
        model = (folder / "model.py").read_text().strip()
        if strategy.input_blind:
            model = strip_inputs(model).strip()
        out.append({"name": name, "model": model, "solution": solution.read_text().strip()})
    return out


def _precision(precision: str) -> dict[str, str] | None:
    """What the task says of a bf16/fp16 run (None: fp32, the problem as written): the dtype and the verified
    protocol's tolerance for it, read from the protocol's declaration."""
    if precision == "fp32":
        return None
    from harness.measure.precision import dtype_name
    from harness.scoring.protocols import VERIFIED

    return {"name": precision, "dtype": dtype_name(precision), "tolerance": f"{VERIFIED.tolerance_for(precision):g}"}


def render(strategy: str | Strategy, problem: P.Problem | str, size: P.Size, backend: str, *,
           hardware: str | None = None, problems_dir: str | Path | None = None,
           precision: str = "fp32") -> list[Message]:
    """The opening messages (system, user) for one problem under one strategy and backend; ``precision``
    bf16/fp16 tells the model that inputs, parameters and the output are in that dtype."""
    s = load_strategy(strategy)
    prob = _problem(problem, problems_dir)
    info = backend_info(backend)
    source = prob.source(size)
    ctx: dict[str, Any] = {
        "strategy": s, "backend": info, "examples": _examples(s, backend), "hardware": None, "roofline": None,
        "input_blind": s.input_blind, "inputs": [], "init_args": [], "plan_first": s.plan_first,
        "plan_bullets": s.plan_bullets, "source": source.strip(), "problem": prob, "precision": _precision(precision),
    }
    if s.hardware or s.roofline:
        hw = hardware_spec(hardware, backend)
        if s.hardware:
            ctx["hardware"] = hw
        if s.roofline:
            ctx["roofline"] = roofline_block(prob, size, hw)
    if s.input_blind:
        ctx["source"] = strip_inputs(source).strip()
        ctx["inputs"], ctx["init_args"] = describe_inputs(prob, size, precision)
    env = _env()
    system = env.get_template(s.system_template).render(**ctx).strip()
    user = env.get_template(s.task_template).render(**ctx).strip()
    if s.extra_instructions:
        user += "\n\n" + "\n".join(f"- {line}" for line in s.extra_instructions)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def render_feedback(strategy: str | Strategy, feedback: Any, backend: str = "cuda") -> Message:
    """The user message after a turn. ``feedback`` has ``.text`` and ``.instruction`` (agents.feedback.Feedback) or is a str."""
    s = load_strategy(strategy)
    if isinstance(feedback, str):
        fb = {"text": feedback, "instruction": ""}
    else:
        fb = {"text": feedback.text, "instruction": getattr(feedback, "instruction", "") or ""}
    content = _env().get_template(s.feedback_template).render(
        fb=fb, strategy=s, backend=backend_info(backend), plan_first=s.plan_first, plan_bullets=s.plan_bullets,
    ).strip()
    return {"role": "user", "content": content}
