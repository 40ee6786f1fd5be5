"""``python -m harness.eval KERNEL.py --problem ID``: measure one kernel, score it, print a verdict table.

Exit code 0 whenever an evaluation happened (whatever the verdict), 2 on bad usage (a ``--timeout`` too short
for the reference model included), 3 when the harness itself failed (a full disk, a dead judge): no verdict. A source file that is
not valid UTF-8 is a candidate all the same: it gets the verdict ``compile_error`` (reason: the first bad
byte and its offset), in the table and in ``--json``, without being run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .measure.precision import DTYPE_NAMES

if TYPE_CHECKING:  # runner and scoring import torch: main imports them once the arguments parsed (--help stays quick)
    from .runner import Evaluation, Evaluator


def _fmt(x: float | None, unit: str = "") -> str:
    return "-" if x is None else f"{x:.3g}{unit}"


def render_table(ev) -> str:
    from .scoring import shapes
    from .scoring.reasons import clip

    rec = ev.record
    lines = [f"{rec.problem_id}  size={rec.size}  device={rec.device}  precision={rec.precision}  status={rec.status}"
             + (f"  (failed in {rec.failed_phase})" if rec.failed_phase else "")]
    lines.append(f"{'protocol':10s} {'verdict':14s} {'speedup [95%]':>22s} {'counted':>8s} {'vs compile':>10s} "
                 f"{'kernel ms':>10s} {'baseline ms':>12s} {'SOL':>6s}")
    for name, r in ev.results.items():
        ok = r.verdict == "correct"  # a wrong kernel's time is no speedup
        iv = f" [{r.speedup_low:.3g}, {r.speedup_high:.3g}]" if ok and r.speedup_low is not None else ""
        speed = (_fmt(r.speedup, "x") + iv) if ok else "-"
        lines.append(f"{name:10s} {r.verdict:14s} {speed:>22s} {_fmt(r.credited_speedup, 'x') if ok else '-':>8s} "
                     f"{_fmt(r.speedup_vs_compile, 'x') if ok else '-':>10s} {_fmt(r.kernel_ms):>10s} "
                     f"{_fmt(r.baseline_ms):>12s} {_fmt(r.sol_score):>6s}"
                     + ("  noisy" if ok and r.noisy else ""))
        for why in r.reasons[:4]:
            lines.append(f"    - {clip(why, 200)}")
    failed = [g for g in rec.guards if not g.passed]
    lines.append(f"guards: {len(rec.guards) - len(failed)}/{len(rec.guards)} passed"
                 + "".join(f"\n    ! {g.name}: {clip(g.detail, 200)}" for g in failed))
    lines.append("provenance: " + "; ".join(provenance_notes(rec)))
    for i, line in enumerate(shapes.lines(rec)):  # --shapes N
        lines.append(f"shapes: {line}" if i == 0 else f"    {line}")
    if rec.error and rec.status != "ok":
        lines.append("error:\n" + "\n".join("    " + x for x in rec.error.strip().splitlines()[-15:]))
    return printable("\n".join(lines))


# Control characters but newline and tab: a candidate's error text and reasons reach the terminal through this table,
# and escape sequences in them once moved the cursor back over the verdict lines to rewrite them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character shown escaped (``\\x1b``), never sent to the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def provenance_notes(rec) -> list[str]:
    """What the source scan says about the candidate. A source that did not build never ran: what it would call at run
    time is unknown ('the candidate only calls PyTorch' read as a finding about a kernel that failed to compile)."""
    pv = rec.provenance
    if rec.status == "compile_error":
        return [f"backend={pv.backend} (as written; it did not build, so nothing ran)"]
    notes = [f"backend={pv.backend}", f"custom kernel ran={pv.custom_kernel_called}"]
    if pv.try_except_fallback:
        notes.append("try/except fallback")
    if pv.enables_tf32:
        notes.append("enables TF32")
    if pv.precision_downcast:
        notes.append("down-casts: " + ",".join(pv.precision_downcast[:3]))
    return notes + pv.notes


def render_json(ev: Evaluation) -> str:
    """The record and results as strict JSON: inf/NaN (the error statistics of a NaN output) appear as the
    strings "Infinity"/"NaN", as in the run store, never as bare tokens or null."""
    rec = json.loads(ev.record.model_dump_json())
    out = {"problem": ev.record.problem_id, "record": rec,
           "protocols": {k: json.loads(v.model_dump_json()) for k, v in ev.results.items()},
           "guards": rec["guards"]}
    return json.dumps(out, indent=1)


def decode_source(data: bytes) -> tuple[str | None, str | None]:
    """(source, None), or (None, why) when the bytes are not valid UTF-8."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, (f"source is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}: "
                      f"{exc.reason}); save the kernel as UTF-8")


def undecodable(data: bytes, why: str, problem_id: str, size: str, device: str, protocols: list[str],
                precision: str = "fp32") -> Evaluation:
    """The evaluation of a source that cannot be read as text: a compile error at the build phase, scored
    like any other record (so every protocol reports ``compile_error`` with the reason)."""
    from .measure.record import MeasurementRecord
    from .runner import Evaluation
    from .scoring.protocols import score

    record = MeasurementRecord(candidate_hash=hashlib.sha256(data).hexdigest(), problem_id=problem_id, size=size,
                               device=device, precision=precision, status="compile_error", failed_phase="build", error=why,
                               created_at=datetime.now(UTC).isoformat())
    return Evaluation(record=record, results={r.protocol: r for r in (score(record, p) for p in protocols)})


def bounded_evaluate(ev: Evaluator, source: str, problem_id: str, protocols: list[str], timeout_s: float
                     ) -> Evaluation | None:
    """Evaluate with one deadline for the whole evaluation: the build gets ``timeout_s``, the reference and
    then the candidate run get what is left of it (at least 1 s each). A source that builds nothing spends
    nothing on the build, so its run gets nearly all of it. None: the reference itself did not finish."""
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    ev.settings = ev.settings.model_copy(update={"build_timeout_s": timeout_s})
    built = ev.build(source, problem_id)
    ev.settings = ev.settings.model_copy(update={"reference_timeout_s": left()})
    if built.ok and not ev.prepare(problem_id):
        return None
    # The build is done (or cached): the run gets no build allowance on top of the time left.
    ev.settings = ev.settings.model_copy(update={"eval_timeout_s": left(), "build_timeout_s": 0.0})
    return ev.evaluate(source, problem_id, protocols, build=built)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m harness.eval", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel", help="candidate source file defining ModelNew")
    ap.add_argument("--problem", required=True, help="'level1/19_ReLU' or '1/19'")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    ap.add_argument("--size", choices=["small", "full"], default=None, help="default: small on cpu, full on cuda")
    ap.add_argument("--protocol", default="naive,verified",
                    help="comma-separated protocol names (naive, verified) or versions such as verified@3; an unknown "
                         "one is refused with the list (default: naive,verified)")
    ap.add_argument("--problems-dir", help="score against an external KernelBench-format problem directory "
                                           "(levelN/*.py; default: the built-in catalog)")
    ap.add_argument("--json", action="store_true", help="print the record and results as JSON")
    ap.add_argument("--quick", action="store_true", help="fewer timing iterations (for smoke tests)")
    ap.add_argument("--shapes", type=int, default=0, metavar="N",
                    help="also check correctness (no timing) at N extra shapes, the problem's size constants scaled "
                         "down (default 0: off; a number over the limit is refused with it); a kernel correct only at "
                         "the published shape is reported shape-specialised")
    ap.add_argument("--precision", choices=list(DTYPE_NAMES), default="fp32",
                    help="fp32 (default): the problem as written. bf16/fp16: inputs, parameters, the reference (and its "
                         "baseline timing) and ModelNew in that dtype, output expected in it, that dtype's tolerance; "
                         "TF32 does not apply")
    ap.add_argument("--timeout", type=float, metavar="SECONDS",
                    help="bound the whole evaluation (build, reference, run); a candidate still running then gets "
                         "the verdict timeout. Default: 900 s for a build plus 600 s for the run (a source that "
                         "builds nothing gets no build allowance)")
    return ap


class UsageError(Exception):
    """Input the user can fix: one line, exit 2."""


def check_args(args: argparse.Namespace):
    """Every argument checked before anything is built or run; returns (problem, protocols, kernel path)."""
    import problems as P

    from .device_check import device_error
    from .scoring import shapes
    from .scoring.protocols import PROTOCOL_VERSIONS, PROTOCOLS

    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    if not 0 <= args.shapes <= shapes.MAX_SHAPES:
        raise UsageError(f"--shapes takes 0 to {shapes.MAX_SHAPES}, not {args.shapes}")
    if bad_device := device_error(args.device):
        raise UsageError(bad_device)
    path = Path(args.kernel)
    if not path.is_file():
        raise UsageError(f"no such kernel file: {path}")
    protocols = [p.strip() for p in args.protocol.split(",") if p.strip()]
    if not protocols:
        raise UsageError(f"--protocol {args.protocol!r} names no protocol; known: {sorted(PROTOCOLS)}")
    if unknown := [p for p in protocols if p not in PROTOCOLS and p not in PROTOCOL_VERSIONS]:
        raise UsageError(f"unknown protocol(s) {', '.join(unknown)}; known: {', '.join(sorted(PROTOCOLS))} or a "
                         f"version ({', '.join(sorted(PROTOCOL_VERSIONS))})")
    if args.problems_dir is not None and not Path(args.problems_dir).expanduser().is_dir():
        raise UsageError(f"--problems-dir {args.problems_dir}: no such directory")
    try:
        problem = P.load(args.problem, args.problems_dir)
    except P.ProblemNotFound as exc:
        raise UsageError(str(exc)) from None
    return problem, protocols, path


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        problem, protocols, path = check_args(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    from .errors import HarnessError
    from .runner import Evaluator
    from .wire.job import EvalSettings

    size = args.size or ("small" if args.device == "cpu" else "full")
    data = path.read_bytes()
    source, why = decode_source(data)
    settings = EvalSettings()
    if args.quick:
        settings = EvalSettings(naive_timing_trials=20, verified_min_iters=5, verified_max_iters=30,
                                verified_seconds_per_subject=0.5)
    settings = settings.model_copy(update={"extra_shapes": args.shapes, "precision": args.precision})
    if source is None:
        result = undecodable(data, why or "", problem.id, size, args.device, protocols, args.precision)
    else:
        try:
            with Evaluator(args.device, size, settings=settings, problems_dir=args.problems_dir) as ev:
                if args.timeout is None:
                    result = ev.evaluate(source, args.problem, protocols)
                else:
                    bounded = bounded_evaluate(ev, source, args.problem, protocols, args.timeout)
                    if bounded is None:  # the user's bound, not a failure of the harness: say whose it is
                        print(f"error: your --timeout {args.timeout:g} s ran out before the reference model of "
                              f"{problem.id} had computed the outputs a kernel is checked against, so this kernel got "
                              "no verdict; give a longer --timeout, or none", file=sys.stderr)
                        return 2
                    result = bounded
        except HarnessError as exc:  # the harness failed, not the kernel: no verdict, say so
            print(f"error: the harness failed (no verdict for this kernel; try again): {exc}", file=sys.stderr)
            return 3
    if args.json:
        print(render_json(result))
    else:
        print(render_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
