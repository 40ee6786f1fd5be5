"""python -m agents.report RUN [--headline] [--audit] [--json] [--html PATH] [--compare RUN2] [--plots DIR] [--export FILE]
[--fast-p-on point|lower]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import metrics as M
from ..turns import DEFAULT_TURN_POLICY, TURN_POLICIES, turn_label

EXPORTS = (".csv", ".md", ".parquet")


class UsageError(Exception):
    """Input the user can fix: one line, exit 2, nothing written."""


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m agents.report", description=__doc__)
    ap.add_argument("run", help="run directory (runs/<name>)")
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON instead of tables")
    ap.add_argument("--headline", action="store_true",
                    help="print, instead of the report, the headline: per system (model, strategy, precision) naive "
                         "and verified side by side (correct, fast_0/1/1.5/2, geomean over correct and over all, "
                         "peak memory), with and without flagged problems, and the waterfall (JSON with --json)")
    ap.add_argument("--audit", action="store_true",
                    help="print, instead of the report, one adjudication block per kernel whose verdict changed "
                         "between naive and verified (JSON with --json)")
    ap.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    ap.add_argument("--compare", metavar="RUN2", help="a second run to compare the headline with (runs over "
                                                      "different problems: the shared problems only, with a note)")
    ap.add_argument("--plots", metavar="DIR", help="write PNG plots into DIR")
    ap.add_argument("--export", metavar="FILE",
                    help="also write the per-attempt table as the report scored it (one row per turn: each protocol's "
                         "verdict, speedup and interval, the speedup counted, noise) to FILE.csv, FILE.md (Markdown) "
                         "or FILE.parquet")
    ap.add_argument("--turn", choices=TURN_POLICIES, default=DEFAULT_TURN_POLICY,
                    help=f"which turn of each (problem, sample) counts (default: {DEFAULT_TURN_POLICY}, the "
                         f"{turn_label(DEFAULT_TURN_POLICY)}, as the sweep's closing table)")
    ap.add_argument("--fast-p-on", choices=["point", "lower"], default="point",
                    help="which speedup fast_p and geomean count: point (default: point estimates, except that under "
                         "verified a noisy speedup counts no higher than its 95%% interval's lower bound; "
                         "harness.scoring.protocols.CONSERVATIVE_CREDIT) or lower (every protocol on its 95%% "
                         "interval's lower bound)")
    ap.add_argument("--resamples", type=int, default=M.BOOTSTRAP_RESAMPLES,
                    help=f"bootstrap resamples (0 = no CIs; default: {M.BOOTSTRAP_RESAMPLES})")
    ap.add_argument("--seed", type=int, default=M.BOOTSTRAP_SEED,
                    help=f"bootstrap seed (default: {M.BOOTSTRAP_SEED})")
    return ap


def check_run(path: str, option: str = "RUN") -> None:
    from ..store import ATTEMPTS

    p = Path(path)
    if not p.exists():
        raise UsageError(f"{option} {path}: no such run directory")
    if not p.is_dir():
        raise UsageError(f"{option} {path} is a file, not a run directory")
    if not (p / ATTEMPTS).is_file():
        raise UsageError(f"{option} {path} has no {ATTEMPTS}: not a run directory (a sweep writes one)")


def check_output(path: str, option: str, *, folder: bool = False) -> None:
    """An output path the report can write: checked before anything is computed or written."""
    p = Path(path)
    if folder:
        if p.exists() and not p.is_dir():
            raise UsageError(f"{option} {path} is a file, not a directory")
        near = next(d for d in (p.absolute(), *p.absolute().parents) if d.exists())
        if not near.is_dir():
            raise UsageError(f"{option} {path}: {near} is a file, not a directory")
        return
    if p.is_dir():
        raise UsageError(f"{option} {path} is a directory; give a file name")
    if not p.absolute().parent.is_dir():
        raise UsageError(f"{option} {path}: no such directory {p.absolute().parent}")


def check_args(args: argparse.Namespace) -> None:
    check_run(args.run)
    if args.compare:
        check_run(args.compare, "--compare")
    if args.resamples < 0:
        raise UsageError(f"--resamples takes 0 or more, not {args.resamples}")
    if args.plots:
        check_output(args.plots, "--plots", folder=True)
    if args.html:
        check_output(args.html, "--html")
    if args.export:
        if Path(args.export).suffix.lower() not in EXPORTS:
            raise UsageError(f"--export {args.export}: name a .csv, .md or .parquet file")
        check_output(args.export, "--export")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_args(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    if args.audit:
        from .audit import audit_run, format_audit

        audit = audit_run(args.run)
        print(audit.model_dump_json(indent=2) if args.json else format_audit(audit).rstrip("\n"))
        if not (args.html or args.plots or args.export):
            return 0

    from .build import build_report

    rep = build_report(args.run, turn_policy=args.turn, resamples=args.resamples, seed=args.seed,
                       compare=args.compare, fast_p_on=args.fast_p_on)
    if args.audit:
        pass  # printed above; the report is built only for --html/--plots/--export
    elif args.headline:
        from .text import format_headline

        assert rep.headline_view is not None
        print(rep.headline_view.model_dump_json(indent=2) if args.json else format_headline(rep.headline_view).rstrip("\n"))
    elif args.json:
        print(rep.model_dump_json(indent=2))
    else:
        from .text import print_report

        print_report(rep)
    if args.export:
        from .export import export_attempts

        rows = export_attempts(rep, args.export)
        print(f"export: {args.export} ({rows} attempts)", file=sys.stderr)
    plots = None
    if args.plots or args.html:
        from .plots import render_all, skipped_plots

        plots = render_all(rep)
        for name, why in skipped_plots(rep).items():
            print(f"plot {name} not drawn: {why}", file=sys.stderr)
    if args.plots:
        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        for name, png in plots.items():
            (out / f"{name}.png").write_bytes(png)
        print(f"plots: {out}/", file=sys.stderr)
    if args.html:
        from .html import write_html

        print(f"html: {write_html(rep, args.html, plots)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from problems.pipes import run_piped

    raise SystemExit(run_piped(main))
