"""The sweep's configuration: one pydantic object, saved as ``config.json`` in every run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .backends import Backend, default_backend, runs_on

# On a CPU host the verified timer's 6 s per subject (tuned for GPU kernels at full size) dominates a
# small-size sweep; these keep a CPU demo sweep in minutes. Explicit ``eval_settings`` win.
CPU_EVAL_DEFAULTS: dict[str, Any] = {"verified_seconds_per_subject": 1.0, "verified_max_iters": 100}

#: Knobs that only change how a run executes, not what it measures: --resume may change them.
EXECUTION_FIELDS = ("budget_usd", "concurrency", "gpus", "build_workers", "progress", "resume", "force", "run_dir",
                    "executor", "ray_address")


class SweepConfig(BaseModel):
    """What to sweep and how. ``None`` fields are resolved when the sweep starts; the saved copy is resolved."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(description="model specs: gpt, claude, openai:<m>, anthropic:<m>, "
                                          "openai-compatible:<m>@<url>, replay:<path>, demo")
    levels: list[int] | None = Field(None, description="KernelBench levels; None = all (or the model's own set)")
    problems: list[str] | None = Field(None, description="problem ids ('level1/19_ReLU' or '1/19'); overrides levels")
    strategies: list[str] = Field(default_factory=lambda: ["one_shot"], description="prompt strategies (prompts/strategies)")
    samples: int = Field(1, ge=1, description="independent conversations per (model, strategy, problem)")
    turns: int = Field(3, ge=1, description="maximum turns per conversation")
    stop_on: Literal["verified", "naive", "none"] = Field("verified", description="end a conversation once correct under this protocol")
    protocols: list[str] = Field(default_factory=lambda: ["naive", "verified"], description="protocols scored for every attempt")
    device: Literal["cuda", "cpu"] | None = Field(None, description="None: cuda when a GPU is visible, else cpu")
    backend: Backend | None = Field(None, description="None: cuda on a GPU, cpu on the CPU")
    size: Literal["small", "full"] | None = Field(None, description="None: full on cuda, small on cpu")
    precision: str = Field("fp32", description="harness.measure.precision: fp32 (the problems as written), bf16 or fp16 (inputs, "
                                               "parameters, reference and kernel in that dtype; the prompts say so)")
    gpus: int | None = Field(None, ge=1, description="evaluation workers: one per GPU (cuda) / parallel workers (cpu, default 1)")
    build_workers: int | None = Field(None, ge=1, description="parallel builds; None = CPU count")
    concurrency: int = Field(32, ge=1, description="conversations in flight at once")
    budget_usd: float | None = Field(None, ge=0, description="stop starting model calls once recorded spend reaches this")
    run_dir: Path | None = Field(None, description="None: runs/<timestamp>")
    resume: bool = False
    force: bool = Field(False, description="start over in a run_dir that holds a run (its run files removed once every "
                                           "check passed); not saved")
    problems_dir: Path | None = Field(None, description="problem files other than the built-in catalog")
    feedback: Literal["visible", "verdict_only"] = Field("visible", description="agents.feedback visibility policy")
    hardware: str | None = Field(None, description="spec sheet for hardware_aware (prompts/hardware/devices.toml); None = detect")
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: Literal["none", "low", "medium", "high"] | None = None
    response_cache: bool = Field(True, description="cache API responses under runs/.response_cache")
    eval_settings: dict[str, Any] = Field(default_factory=dict, description="harness.EvalSettings overrides")
    progress: bool | None = Field(None, description="live progress bar; None = only on a TTY")
    executor: Literal["local", "ray"] = Field("local", description="where evaluations run: this host, or a Ray cluster")
    ray_address: str | None = Field(None, description="Ray cluster to join ('auto', 'HOST:6379'); None = a local Ray")
    gpu_type: str | None = Field(None, description="Ray: run on workers declaring resource gpu_type:<this> (H200, H100, ...)")
    allow_gpu_types: list[str] | None = Field(None, description="Ray: other GPU types this sweep may also run on")

    @model_validator(mode="after")
    def _check(self) -> SweepConfig:
        if not self.models:
            raise ValueError("at least one model is needed")
        if self.resume and self.force:
            raise ValueError("--resume continues a run and --force starts it over: give one of them")
        if self.stop_on != "none" and self.stop_on not in self.protocols:
            raise ValueError(f"--stop-on {self.stop_on} needs that protocol in --protocols")
        if self.backend is not None and self.device in ("cuda", "cpu") and not runs_on(self.backend, self.device):
            raise ValueError(f"backend {self.backend} does not run on device {self.device}")
        if self.executor == "local" and not self.resume and (self.ray_address or self.gpu_type or self.allow_gpu_types):
            raise ValueError("--ray-address, --gpu-type and --allow-gpu-types need --executor ray")
        if self.allow_gpu_types and not self.gpu_type:
            raise ValueError("--allow-gpu-types needs --gpu-type")
        if self.precision != "fp32":  # checked against harness.measure.precision only then: importing harness imports torch
            from harness.measure.precision import check

            check(self.precision)
        if "precision" in self.eval_settings:
            raise ValueError("set the precision with --precision (SweepConfig.precision), not as an eval setting")
        return self

    def resolved(self) -> SweepConfig:
        """A copy with device, backend, size and eval settings filled in."""
        # A Ray driver often runs on a GPU-less head node: a GPU type asked for means the cluster's GPUs.
        device = self.device or ("cuda" if self.executor == "ray" and self.gpu_type else _detect_device())
        backend = self.backend or default_backend(device)
        size = self.size or ("full" if device == "cuda" else "small")
        settings = dict(CPU_EVAL_DEFAULTS) if device == "cpu" else {}
        settings.update(self.eval_settings)
        return self.model_copy(update=dict(device=device, backend=backend, size=size, eval_settings=settings))

    def eval_settings_obj(self):
        import harness

        return harness.EvalSettings(**self.eval_settings, precision=self.precision)


def _detect_device() -> str:
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except Exception:  # noqa: BLE001
        return "cpu"
