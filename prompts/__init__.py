"""Prompt strategies and templates, as data files.

    prompts/strategies/<name>.toml   a strategy: which templates, examples and blocks (adding one = adding a file)
    prompts/templates/*.j2           jinja2 templates: system, task (first user message), feedback
    prompts/examples/<name>/         worked examples: model.py (KernelBench format) + <backend>.py (its ModelNew)
    prompts/backends/<backend>.toml  the ModelNew contract for cuda, triton and cpu
    prompts/hardware/devices.toml    spec sheets for the hardware_aware strategy

Public surface::

    prompts.list_strategies()                                   -> ['few_shot', 'hardware_aware', ...]
    prompts.load_strategy("one_shot")                           -> Strategy
    prompts.render(strategy, problem, size, backend, hardware=) -> [{"role": "system", ...}, {"role": "user", ...}]
    prompts.render_feedback(strategy, feedback, backend)        -> {"role": "user", "content": ...}
"""

from .render import (
    BACKENDS,
    describe_inputs,
    hardware_spec,
    list_hardware,
    render,
    render_feedback,
    strip_inputs,
)
from .strategy import Strategy, UnknownStrategy, list_strategies, load_strategy

__all__ = [
    "BACKENDS",
    "Strategy",
    "UnknownStrategy",
    "describe_inputs",
    "hardware_spec",
    "list_hardware",
    "list_strategies",
    "load_strategy",
    "render",
    "render_feedback",
    "strip_inputs",
]
