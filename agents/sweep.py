"""``python -m agents.sweep``: prompt models with KernelBench workloads, iterate on feedback, record it all.

    python -m agents.sweep --models demo --device cpu --size small
    python -m agents.sweep --models gpt,claude --levels 1,2 --strategies one_shot,input_blind --turns 3
    python -m agents.sweep --models replay:path/to/kernels --turns 1
    python -m agents.sweep --run-dir runs/NAME --resume

The CLI is a thin layer over ``run_sweep(SweepConfig) -> RunSummary``. Model calls run concurrently
on asyncio (bounded per provider by models.toml's ``concurrency``); builds and evaluations run on a
``LocalExecutor``, or on a Ray cluster with ``--executor ray`` (docs/cluster.md). The resolved config
is saved as ``<run-dir>/config.json``; attempts are appended to ``attempts.jsonl``; the summary goes to
``summary.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import problems as P
from harness.measure.precision import DTYPE_NAMES

from .config import CPU_EVAL_DEFAULTS, EXECUTION_FIELDS, SweepConfig
from .driver import ERRORS, Driver, SampleTask, read_errors
from .executor import Executor, LocalExecutor
from .progress import RunSummary, SweepProgress, closing_line, level_of, print_summary, summarize
from .store import ATTEMPTS, CONFIG, TORN, RunStore


class SweepError(Exception):
    """A configuration problem the user can fix; the CLI prints it as one line and exits with 2."""


# -- planning --------------------------------------------------------------------------------------

def _demo_problems(config: SweepConfig) -> list[P.Problem]:
    from .demo import SCRIPT

    out = []
    for level, number in sorted(SCRIPT):
        if config.levels and level not in config.levels:
            continue
        try:
            out.append(P.load(f"{level}/{number}", config.problems_dir))
        except P.ProblemNotFound:
            continue
    return out


def plan(config: SweepConfig, providers: dict[str, str] | None = None) -> list[SampleTask]:
    """Every conversation of the sweep, in the order they are started. ``providers``: spec -> provider
    for clients that did not come from ``agents.models.resolve`` (tests)."""
    from .models import parse_spec, replay_inventory

    explicit = P.select(ids=config.problems, problems_dir=config.problems_dir) if config.problems else None
    tasks: list[SampleTask] = []
    for model in config.models:
        provider = (providers or {}).get(model) or parse_spec(model).provider
        if explicit is not None:
            pairs = [(p, s) for p in explicit for s in range(config.samples)]
        elif provider == "replay":
            pairs = []
            for level, number, sample in replay_inventory(parse_spec(model).model):
                if config.levels and level not in config.levels:
                    continue
                try:
                    pairs.append((P.load(f"{level}/{number}", config.problems_dir), sample))
                except P.ProblemNotFound:
                    continue
        elif provider == "demo":
            pairs = [(p, s) for p in _demo_problems(config) for s in range(config.samples)]
        else:
            pairs = [(p, s) for p in P.select(levels=config.levels, problems_dir=config.problems_dir)
                     for s in range(config.samples)]
        for strategy in config.strategies:
            tasks += [SampleTask(model, strategy, p, s) for p, s in pairs]
    # Interleave samples last, so early results cover every problem once before any gets a second sample.
    tasks.sort(key=lambda t: (t.sample, t.problem.level, t.problem.number))
    return tasks


def _default_run_dir(config: SweepConfig) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    models = "+".join(m.split(":")[-1].split("/")[-1][:24] for m in config.models)
    return Path("runs") / f"{stamp}-{models}"


# -- validation: everything is checked before the run directory is created or written ---------------

FROM_SAVED = "(from config.json)"  # --models of a --resume that names none: the saved run's
SUMMARY = "summary.json"
RUN_FILES = (CONFIG, CONFIG + ".tmp", ATTEMPTS, ERRORS, SUMMARY, TORN)  # what --force removes


def settle(config: SweepConfig) -> SweepConfig:
    """The config a sweep runs with: a new run's resolved (run dir picked and usable), or for --resume the saved
    one with only execution knobs changed. Reads, never writes."""
    if config.resume:
        return resume_config(config)
    config = config.resolved()
    run_dir = Path(config.run_dir) if config.run_dir else _default_run_dir(config)
    check_run_dir(run_dir, force=config.force)
    return config.model_copy(update={"run_dir": run_dir})


def check_run_dir(run_dir: Path, *, force: bool = False) -> None:
    """A new run's directory: absent or a directory without a run (or any, with --force), creatable."""
    if run_dir.exists() and not run_dir.is_dir():
        raise SweepError(f"--run-dir {run_dir} is a file, not a directory")
    if not force and any((run_dir / f).exists() for f in RUN_FILES):
        raise SweepError(f"{run_dir} already holds a run; add --resume to continue it, --force to start it over, "
                         "or pick another --run-dir")
    near = next(d for d in (run_dir.absolute(), *run_dir.absolute().parents) if d.exists())
    if not near.is_dir():
        raise SweepError(f"--run-dir {run_dir}: {near} is a file, not a directory")
    if not os.access(near, os.W_OK | os.X_OK):
        raise SweepError(f"--run-dir {run_dir}: {near} is not writable")


def resume_config(config: SweepConfig) -> SweepConfig:
    """The saved config of the run to resume, with the execution knobs given; plan options that differ are refused
    (a resumed run mixing two plans would report neither)."""
    if config.run_dir is None:
        raise SweepError("--resume needs --run-dir runs/NAME")
    run_dir = Path(config.run_dir)
    if not run_dir.is_dir():
        raise SweepError(f"nothing to resume: {run_dir} {'is a file' if run_dir.exists() else 'does not exist'}")
    try:
        saved = json.loads((run_dir / CONFIG).read_text())
    except FileNotFoundError:
        raise SweepError(f"nothing to resume: {run_dir} has no {CONFIG} (start the run without --resume)") from None
    except (OSError, ValueError) as e:
        raise SweepError(f"cannot resume {run_dir}: its {CONFIG} does not read ({e})") from None
    if changed := plan_changes(config, saved):
        raise SweepError(f"--resume runs {run_dir} as saved; these options differ from its {CONFIG}: "
                         + "; ".join(f"--{k.replace('_', '-')} saved {_show(a)}, given {_show(b)}" for k, a, b in changed)
                         + " (drop them to resume, or --force to start over with them)")
    overrides = {k: getattr(config, k) for k in EXECUTION_FIELDS if k in config.model_fields_set}
    return SweepConfig.model_validate({**saved, **overrides, "resume": True, "force": False, "run_dir": str(run_dir)})


def plan_changes(config: SweepConfig, saved: dict) -> list[tuple[str, object, object]]:
    """(field, saved, given) for each plan option given that differs from the saved config: every field
    but EXECUTION_FIELDS. An eval setting given is compared with the saved one of that key."""
    given = config.model_dump(mode="json", include=set(config.model_fields_set) - set(EXECUTION_FIELDS) - {"force"})
    out = []
    for key, value in given.items():
        old = shown = saved.get(key)
        if key == "models" and value == [FROM_SAVED]:
            continue
        if key == "eval_settings":
            old = shown = {k: (old or {}).get(k) for k in value}
        elif key == "problems" and old is not None:
            old, value = _ids(old), _ids(value)
        elif key == "problems_dir" and old is not None:
            old, value = str(Path(old).expanduser().resolve()), str(Path(value).expanduser().resolve())
        if old != value:
            out.append(("eval_set" if key == "eval_settings" else key, shown, given[key]))
    return out


def _ids(ids: list[str]) -> list[object]:
    """'1/19' and 'level1/19_ReLU' name the same problem."""
    out: list[object] = []
    for i in ids:
        try:
            out.append(P.parse_id(i)[:2])
        except P.ProblemNotFound:
            out.append(i)
    return out


def _show(value: object) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "(none)"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "(none)"
    return "(default)" if value is None else str(value)


def check_eval_settings(settings: dict) -> None:
    """Every key a harness.EvalSettings field and every value one it takes; a typo gets its close matches."""
    from pydantic import ValidationError

    import harness

    fields = [f for f in harness.EvalSettings.model_fields if f != "precision"]  # precision: --precision
    for key in settings:
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else " (see harness/wire/job.py for the fields)"
            raise SweepError(f"--eval-set {key}: no such harness.EvalSettings field{hint}")
    try:
        harness.EvalSettings(**settings)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(map(str, err.get("loc", ()))) or "?"
        raise SweepError(f"--eval-set {key}={settings.get(key, err.get('input'))}: {err.get('msg')}") from None


def check(config: SweepConfig, providers: dict[str, str] | None = None) -> list[SampleTask]:
    """Every check of a settled config that needs no run directory; returns the plan (at least one conversation)."""
    import prompts

    _check_device(config)
    for s in config.strategies:
        prompts.load_strategy(s)  # unknown strategies fail before any work starts
    try:
        prompts.hardware_spec(config.hardware, config.backend or "cpu")
    except ValueError as e:
        raise SweepError(str(e)) from None
    check_eval_settings(config.eval_settings)
    if config.problems_dir is not None and not Path(config.problems_dir).expanduser().is_dir():
        raise SweepError(f"--problems-dir {config.problems_dir}: no such directory")
    try:
        if config.levels and not config.problems:
            have = sorted({p.level for p in P.list_problems(problems_dir=config.problems_dir)})
            if bad := [lv for lv in config.levels if lv not in have]:
                raise SweepError(f"--levels {','.join(map(str, bad))}: no such level (there are {_show(have)})")
        tasks = plan(config, providers)
    except P.ProblemNotFound as e:
        raise SweepError(f"--problems: {e}") from None
    if not tasks:
        raise SweepError(f"nothing to run: no problem of the selection (--levels/--problems) for --models "
                         f"{_show(config.models)}")
    return tasks


def open_run(config: SweepConfig) -> RunStore:
    """Create the run directory (with --force, remove the previous run's files) and save the config. Only after
    ``check`` passed: a start that fails leaves no directory and no changed one."""
    run_dir = Path(config.run_dir)
    if config.force and (old := [f for f in RUN_FILES if (run_dir / f).exists()]):
        for f in old:
            (run_dir / f).unlink()
        print(f"--force: starting {run_dir} over (removed {', '.join(old)})", file=sys.stderr)
    store = RunStore(run_dir)
    store.write_config(config.model_dump(mode="json", exclude={"force"}))  # a resume's: its execution knobs now
    if config.resume and (line := store.repair_torn()):
        print(f"{ATTEMPTS} line {line} was torn (a write cut off by a crash): moved to {TORN}; that attempt runs "
              "again", file=sys.stderr)
    return store


def prepare(config: SweepConfig, providers: dict[str, str] | None = None
            ) -> tuple[SweepConfig, RunStore, list[SampleTask]]:
    """Settle and check the config, then open the run directory: the resolved config, its store and its plan."""
    config = settle(config)
    tasks = check(config, providers)
    return config, open_run(config), tasks


def _check_device(config: SweepConfig) -> None:
    """A device this host cannot run fails before any work. A Ray sweep's GPUs are the cluster's, not this host's."""
    from harness.device_check import device_error

    if config.executor == "local" and config.device and (why := device_error(config.device)):
        raise SweepError(why)


def _resolve_clients(config: SweepConfig) -> tuple[dict, dict[str, str], dict[str, int]]:
    from .models import DEFAULT_CACHE_DIR, load_config, parse_spec, resolve

    models_cfg = load_config()
    clients, resolved, limits = {}, {}, {}
    for spec in config.models:
        r = parse_spec(spec, models_cfg)
        cache = DEFAULT_CACHE_DIR if config.response_cache and r.provider not in ("demo", "replay") else None
        clients[spec] = resolve(spec, cache_dir=cache)
        resolved[spec] = r.model
        limits[r.provider] = models_cfg.provider(r.provider).concurrency \
            if r.provider not in ("demo", "replay") else config.concurrency
    return clients, resolved, limits


# -- running ---------------------------------------------------------------------------------------

def make_executor(config: SweepConfig) -> Executor:
    """The executor a resolved config asks for: a LocalExecutor, or a RayExecutor (``--executor ray``)."""
    common = dict(settings=config.eval_settings_obj(), problems_dir=config.problems_dir, protocols=config.protocols)
    if config.executor == "local":
        return LocalExecutor(config.device or "cpu", config.size or "small", gpus=config.gpus,
                             build_workers=config.build_workers,
                             timeline_path=Path(config.run_dir) / "timeline.jsonl" if config.run_dir else None,
                             **common)
    try:
        from .ray_executor import RayExecutor

        return RayExecutor(config.device or "cuda", config.size or "full", address=config.ray_address,
                           gpu_type=config.gpu_type, allow_gpu_types=config.allow_gpu_types, gpus=config.gpus,
                           **common)
    except (ImportError, ValueError, ConnectionError) as e:
        raise SweepError(f"--executor ray: {e}") from None


def run_sweep(config: SweepConfig, *, executor: Executor | None = None, clients: dict | None = None) -> RunSummary:
    """Run (or resume) a sweep to completion and return its summary. ``executor`` and ``clients`` are for
    tests and other hosts; by default a LocalExecutor and ``agents.models.resolve`` are used."""
    return asyncio.run(_run(config, executor=executor, clients=clients))


async def _run(config: SweepConfig, *, executor: Executor | None, clients: dict | None) -> RunSummary:
    started = time.monotonic()
    config = settle(config)  # --resume: the saved models, before their clients
    if clients is None:
        clients, resolved, limits = _resolve_clients(config)  # MissingCredentials surfaces before any work
    else:
        resolved = {k: getattr(c, "model", k) for k, c in clients.items()}
        limits = {getattr(c, "provider", "unknown"): config.concurrency for c in clients.values()}
    tasks = check(config, {k: getattr(c, "provider", "") for k, c in clients.items()})
    store = open_run(config)
    own_executor = executor is None
    if executor is None:
        executor = make_executor(config)
    semaphores = {prov: asyncio.Semaphore(n) for prov, n in limits.items()}
    before = len(store.keys())
    tally_protocol = config.stop_on if config.stop_on != "none" else config.protocols[-1]
    progress = SweepProgress(len(tasks), enabled=config.progress, protocol=tally_protocol, executor=executor,
                             levels=Counter(level_of(t.problem.id) for t in tasks))
    driver = Driver(config, store, executor, clients, semaphores=semaphores, resolved_models=resolved,
                    on_attempt=progress.on_attempt,
                    on_sample=lambda t, o: progress.on_sample(t, o, (driver._existing.get(t.prefix) or [None])[-1]))
    progress.spend = driver.spend
    gate = asyncio.Semaphore(config.concurrency)

    async def one(task: SampleTask) -> str:
        async with gate:
            return await driver.run_sample(task)

    async def ticker() -> None:
        while True:
            await asyncio.sleep(1.0)
            progress.refresh()

    outcomes: list[str] = []
    cancelled = False
    try:
        with progress:
            tick = asyncio.create_task(ticker())
            try:
                outcomes = list(await asyncio.gather(*(one(t) for t in tasks)))
            finally:
                tick.cancel()
    except (asyncio.CancelledError, KeyboardInterrupt):
        cancelled = True
        raise
    finally:
        if own_executor:
            executor.close(cancel=cancelled)
        for c in clients.values():
            try:
                await c.aclose()
            except Exception:  # noqa: BLE001
                pass
    attempts = store.attempts()
    previous = _finished_summary(store) if config.resume else None
    wall = time.monotonic() - started
    if previous is not None and len(store.keys()) == before and set(outcomes) <= {"skipped"}:
        # A finished run resumed with nothing left to do: summary.json stands as written; what is returned says so,
        # with this invocation's own time (the CLI prints one line, not the earlier session's figures as new).
        return previous.model_copy(update={"idle": True, "wall_s": wall, "new_attempts": 0})
    summary = RunSummary(
        run_dir=str(store.dir), wall_s=wall, attempts=len(attempts),
        new_attempts=len(store.keys()) - before, errors=len(read_errors(store.dir)),
        outcomes=dict(sorted({o: outcomes.count(o) for o in set(outcomes)}.items())),
        cost_usd=sum(a.cost_usd or 0.0 for a in attempts), stopped_by_budget="budget" in outcomes,
        rows=summarize(attempts, config.protocols),
    )
    if previous is not None:  # wall_s stays this invocation's own; the run's sessions are summed apart
        summary.total_wall_s = (previous.total_wall_s if previous.total_wall_s is not None else previous.wall_s) + wall
        summary.invocations = previous.invocations + 1
    (store.dir / SUMMARY).write_text(summary.model_dump_json(indent=2))
    return summary


def _finished_summary(store: RunStore) -> RunSummary | None:
    """The summary an earlier invocation wrote when it finished (None: it did not finish, or cannot be read)."""
    from pydantic import ValidationError

    try:
        return RunSummary.model_validate_json((store.dir / SUMMARY).read_text())
    except (OSError, ValidationError):
        return None


# -- CLI -------------------------------------------------------------------------------------------

def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m agents.sweep", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=_csv, help="comma-separated specs: gpt, claude, openai:<m>, anthropic:<m>, "
                                                "openai-compatible:<m>@<url>, replay:<path>, demo")
    ap.add_argument("--levels", type=lambda s: [int(x) for x in _csv(s)],
                    help="KernelBench levels, e.g. 1,2 (default: all; a replay or demo model: its own problems)")
    ap.add_argument("--problems", type=_csv, help="problem ids, e.g. level1/19_ReLU,1/20 (overrides --levels)")
    ap.add_argument("--strategies", type=_csv, help="prompt strategies; see prompts/strategies/")
    ap.add_argument("--samples", type=int)
    ap.add_argument("--turns", type=int)
    ap.add_argument("--stop-on", choices=["verified", "naive", "none"])
    ap.add_argument("--protocols", type=_csv, help="protocols scored for every attempt")
    ap.add_argument("--device", help="cuda or cpu (default: cuda when a GPU is visible)")
    ap.add_argument("--backend", choices=["cuda", "triton", "cpu"], help="what the kernels are written in (default: cuda on a GPU, cpu on the CPU)")
    ap.add_argument("--size", choices=["small", "full"], help="problem sizes (default: full on cuda, small on cpu)")
    ap.add_argument("--precision", choices=list(DTYPE_NAMES),
                    help="fp32 (default): the problems as written. bf16/fp16: inputs, parameters, the reference and its "
                         "baseline timing, and every kernel in that dtype, output expected in it, that dtype's tolerance "
                         "(TF32 does not apply); the prompts tell the model (harness.measure.precision)")
    ap.add_argument("--gpus", type=int, help="evaluation workers: one per GPU (default: every visible GPU; on cpu 1)")
    ap.add_argument("--build-workers", type=int, help="parallel builds (default: the CPU count)")
    ap.add_argument("--concurrency", type=int, help="conversations in flight")
    ap.add_argument("--budget-usd", type=float, help="stop starting model calls once the recorded spend reaches this (default: no limit)")
    ap.add_argument("--run-dir", type=Path, help="where the run is written (default: runs/<timestamp>-<models>)")
    ap.add_argument("--resume", action="store_true", default=None,
                    help="continue the run in --run-dir as its config.json says; only execution options (concurrency, "
                         "gpus, build workers, budget, progress, executor) may be given anew, a different plan is refused")
    ap.add_argument("--force", action="store_true", default=None,
                    help="start over in a --run-dir that holds a run: its run files are removed once the new start "
                         "has passed every check")
    ap.add_argument("--problems-dir", type=Path, help="an external KernelBench-format directory (levelN/*.py) instead of the built-in catalog")
    ap.add_argument("--feedback", choices=["visible", "verdict_only"])
    ap.add_argument("--hardware", help="spec sheet for hardware_aware: H200, H100, A100, L40S, cpu (default: detected)")
    ap.add_argument("--max-tokens", type=int,
                    help="output tokens per turn, reasoning included (default: the model's in models.toml, else 16000)")
    ap.add_argument("--temperature", type=float, help="sampling temperature (default: the model's in models.toml, else not sent)")
    ap.add_argument("--reasoning-effort", choices=["none", "low", "medium", "high"],
                    help="for reasoning models (default: the model's in models.toml)")
    ap.add_argument("--no-response-cache", dest="response_cache", action="store_false", default=None,
                    help="call the model even when runs/.response_cache holds its answer to the same prompt")
    ap.add_argument("--eval-set", action="append", default=[], metavar="KEY=VALUE",
                    help="override an evaluation setting (repeatable), e.g. verified_seconds_per_subject=2; an unknown "
                         "key is refused with its close matches. KEY is a field of harness.EvalSettings "
                         f"(harness/wire/job.py), default in brackets: {eval_set_keys()}. On a CPU the sweep "
                         f"defaults to {_show(CPU_EVAL_DEFAULTS)}")
    ap.add_argument("--shapes", type=int, metavar="N",
                    help="also check every kernel's correctness (no timing) at N extra shapes of its problem (size "
                         "constants scaled down, harness.scoring.shapes; default 0: off); sets eval setting extra_shapes")
    ap.add_argument("--executor", choices=["local", "ray"], help="where evaluations run")
    ap.add_argument("--ray-address", help="Ray cluster to join: auto, or HOST:6379 (default: start a local Ray)")
    ap.add_argument("--gpu-type", help="Ray: only workers declaring resource gpu_type:<TYPE>, e.g. H200")
    ap.add_argument("--allow-gpu-types", type=_csv, help="Ray: other GPU types this sweep may run on, e.g. H100")
    ap.add_argument("--progress", dest="progress", action="store_true", default=None,
                    help="live progress line (default: only on a terminal)")
    ap.add_argument("--no-progress", dest="progress", action="store_false",
                    help="one plain line per finished conversation instead")
    _describe(ap)
    return ap


def eval_set_keys() -> str:
    """'naive_trials [5], ...': every key --eval-set takes, with its default (harness.wire.job imports no torch)."""
    from harness.wire.job import EvalSettings

    return ", ".join(f"{k} [{f.default if f.default is not None else '-'}]"
                     for k, f in EvalSettings.model_fields.items() if k != "precision")


def _describe(ap: argparse.ArgumentParser) -> None:
    """Every option a help text and its default: from SweepConfig's field where the option names none."""
    fields = SweepConfig.model_fields
    for action in ap._actions:
        field = fields.get(action.dest)
        if field is None or action.dest in ("resume", "force", "response_cache", "progress"):
            continue
        text = action.help or field.description or ""
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        if default not in (None, [], {}) and "default" not in text.lower():
            shown = _show(default) if isinstance(default, list | dict) else default
            text = f"{text} (default: {shown})" if text else f"default: {shown}"
        action.help = text.replace("%", "%%")


def end_children() -> int:
    """Kill what this process started (after Ctrl-C): builds and judges run in sessions of their own, out of reach of
    the terminal's SIGINT, and a build in flight kept the interrupted sweep alive until its compiler finished (~75 s).
    A child that leads its own process group is killed with its group (its compiler too). Linux's /proc; elsewhere
    nothing. Returns how many were killed."""
    import signal

    me, killed = os.getpid(), 0
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return 0
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        except OSError:
            continue
        pid, ppid, pgrp = int(entry), int(fields[1]), int(fields[2])
        if ppid != me:
            continue
        try:
            if pgrp == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    data = {k: v for k, v in vars(args).items() if v is not None and k not in ("eval_set", "shapes")}
    settings: dict = {}
    if args.eval_set:
        for item in args.eval_set:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise SweepError(f"--eval-set {item}: use KEY=VALUE, KEY a harness.EvalSettings field")
            key = key.strip()
            try:
                settings[key] = float(value) if "." in value or "e" in value.lower() else int(value)
            except ValueError:
                settings[key] = {"true": True, "false": False}.get(value.lower(), value)
    if args.shapes is not None:
        settings["extra_shapes"] = args.shapes
    if settings:
        data["eval_settings"] = settings
    if args.resume and not args.models:
        data["models"] = [FROM_SAVED]
    return SweepConfig(**data)


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    from .models import MissingCredentials, ProviderError

    args = build_parser().parse_args(argv)
    if args.device is not None:
        from harness.device_check import device_error

        if args.device not in ("cpu", "cuda"):
            print(f"error: {device_error(args.device) or f'--device {args.device}: use cpu or cuda'}", file=sys.stderr)
            return 2
    if args.shapes is not None:
        from harness.scoring.shapes import MAX_SHAPES

        if not 0 <= args.shapes <= MAX_SHAPES:
            print(f"error: --shapes takes 0 to {MAX_SHAPES}, not {args.shapes}", file=sys.stderr)
            return 2
    if not args.models and not args.resume:
        print("error: --models is required (e.g. --models demo, or --models replay:PATH)", file=sys.stderr)
        return 2
    try:
        summary = run_sweep(config_from_args(args))
    except MissingCredentials as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValidationError as e:  # a config's own check: its message, not pydantic's framing
        err = e.errors()[0]
        where = ".".join(map(str, err.get("loc", ())))
        print(f"error: {where + ': ' if where else ''}{str(err.get('msg')).removeprefix('Value error, ')}", file=sys.stderr)
        return 2
    except (SweepError, ProviderError, LookupError) as e:
        msg = str(e).strip().splitlines()
        print(f"error: {msg[0] if len(msg) == 1 else ' '.join(m.strip() for m in msg)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        end_children()
        print("interrupted; continue with --resume", file=sys.stderr)
        return 130
    if summary.idle:
        print(f"nothing to do: every conversation of {summary.run_dir} was finished before ({summary.attempts} "
              f"attempts, none new); {closing_line(summary.run_dir).split('; ', 1)[1]}")
        return 0
    saved = RunStore(summary.run_dir).read_config() or {}
    print_summary(summary, saved.get("protocols", ["naive", "verified"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
