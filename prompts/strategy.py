"""Prompt strategies as data: one TOML file per strategy under ``prompts/strategies/``.

A strategy names its templates and switches the optional blocks of the task prompt on or off.
Adding a strategy is adding a file; ``load_strategy`` also accepts a path to a TOML file elsewhere.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

PROMPTS_DIR = Path(__file__).resolve().parent
STRATEGIES_DIR = PROMPTS_DIR / "strategies"
TEMPLATES_DIR = PROMPTS_DIR / "templates"
EXAMPLES_DIR = PROMPTS_DIR / "examples"
BACKENDS_DIR = PROMPTS_DIR / "backends"
HARDWARE_FILE = PROMPTS_DIR / "hardware" / "devices.toml"


class UnknownStrategy(LookupError):
    pass


class Strategy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("", description="file stem unless given")
    description: str = ""
    system_template: str = Field("system.j2", description="template file under prompts/templates/")
    task_template: str = Field("task.j2", description="first user message")
    feedback_template: str = Field("feedback.j2", description="user message after each evaluated turn")
    examples: list[str] = Field(default_factory=list, description="folders under prompts/examples/, in order")
    hardware: bool = Field(False, description="show the target device's spec sheet")
    roofline: bool = Field(False, description="show the problem's FLOPs, bytes and speed-of-light time")
    input_blind: bool = Field(False, description="hide get_inputs/get_init_inputs and size constants")
    plan_first: bool = Field(False, description="ask for a short plan before the code, in the same reply")
    plan_bullets: int = 8
    extra_instructions: list[str] = Field(default_factory=list, description="appended to the requirements")


def list_strategies() -> list[str]:
    """Names of the built-in strategies (file stems under prompts/strategies/)."""
    return sorted(p.stem for p in STRATEGIES_DIR.glob("*.toml"))


def load_strategy(name: str | Path | Strategy) -> Strategy:
    """A built-in strategy by name, or a strategy TOML file by path."""
    if isinstance(name, Strategy):
        return name
    path = Path(name)
    if path.suffix != ".toml" or not path.is_file():
        path = STRATEGIES_DIR / f"{name}.toml"
    if not path.is_file():
        raise UnknownStrategy(f"unknown prompt strategy {str(name)!r}; built-in: {', '.join(list_strategies())}")
    data = tomllib.loads(path.read_text())
    data.setdefault("name", path.stem)
    strategy = Strategy.model_validate(data)
    for ex in strategy.examples:
        if not (EXAMPLES_DIR / ex / "model.py").is_file():
            raise UnknownStrategy(f"strategy {strategy.name!r} names example {ex!r}, which has no prompts/examples/{ex}/model.py")
    return strategy
