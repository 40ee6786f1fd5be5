"""KernelBench's 250 workloads as KernelBench-format files, with size presets, input domains,
flags and roofline counts.

Public surface::

    problems.load("level1/19_ReLU")          # or "1/19"
    problems.list_problems(level=1)
    problems.select(ids=..., levels=...)
    problems.input_specs(problem, "small")   # meta-device shapes, nothing allocated
    problems.roofline(problem, "full")       # FLOPs and minimum bytes of the reference
"""

from .catalog import (
    BUILTIN_DIR,
    Flag,
    Problem,
    ProblemMeta,
    ProblemNotFound,
    Size,
    list_problems,
    load,
    parse_id,
    select,
)
from .domains import ALLOWED_SCALES, Domain, allowed_scales
from .module import (
    TensorSpec,
    ValueSpec,
    exec_source,
    forward_arg_names,
    init_inputs,
    input_specs,
    load_module,
)
from .source import SizePresetError, render_at_size

__all__ = [
    "ALLOWED_SCALES",
    "BUILTIN_DIR",
    "Domain",
    "Flag",
    "Problem",
    "ProblemMeta",
    "ProblemNotFound",
    "Size",
    "SizePresetError",
    "TensorSpec",
    "ValueSpec",
    "allowed_scales",
    "exec_source",
    "forward_arg_names",
    "init_inputs",
    "input_specs",
    "list_problems",
    "load",
    "load_module",
    "parse_id",
    "render_at_size",
    "select",
]
