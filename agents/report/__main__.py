"""python -m agents.report RUN [--headline] [--audit] [--json] [--html PATH] [--compare RUN2] [--plots DIR] [--fast-p-on point|lower]"""

from __future__ import annotations

import argparse
import sys

from harness.scoring.protocols import CONSERVATIVE_CREDIT

from .. import metrics as M
from ..turns import DEFAULT_TURN_POLICY, TURN_POLICIES, turn_label


def main(argv: list[str] | None = None) -> int:
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
    ap.add_argument("--compare", metavar="RUN2", help="a second run to compare the headline with")
    ap.add_argument("--plots", metavar="DIR", help="write PNG plots into DIR")
    ap.add_argument("--turn", choices=TURN_POLICIES, default=DEFAULT_TURN_POLICY,
                    help=f"which turn of each (problem, sample) counts (default: {DEFAULT_TURN_POLICY}, the "
                         f"{turn_label(DEFAULT_TURN_POLICY)}, as the sweep's closing table)")
    ap.add_argument("--fast-p-on", choices=["point", "lower"], default="point",
                    help="which speedup fast_p and geomean count: point (default: point estimates, except that under "
                         "verified " + CONSERVATIVE_CREDIT.replace("%", "%%") + ") or lower (every protocol on its "
                         "95%% interval's lower bound)")
    ap.add_argument("--resamples", type=int, default=M.BOOTSTRAP_RESAMPLES, help="bootstrap resamples (0 = no CIs)")
    ap.add_argument("--seed", type=int, default=M.BOOTSTRAP_SEED)
    args = ap.parse_args(argv)

    if args.audit:
        from .audit import audit_run, format_audit

        try:
            audit = audit_run(args.run)
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(audit.model_dump_json(indent=2) if args.json else format_audit(audit).rstrip("\n"))
        if not (args.html or args.plots):
            return 0

    from .build import build_report

    try:
        rep = build_report(args.run, turn_policy=args.turn, resamples=args.resamples, seed=args.seed,
                           compare=args.compare, fast_p_on=args.fast_p_on)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.audit:
        pass  # printed above; the report is built only for --html/--plots
    elif args.headline:
        from .text import format_headline

        assert rep.headline_view is not None
        print(rep.headline_view.model_dump_json(indent=2) if args.json else format_headline(rep.headline_view).rstrip("\n"))
    elif args.json:
        print(rep.model_dump_json(indent=2))
    else:
        from .text import print_report

        print_report(rep)
    plots = None
    if args.plots or args.html:
        from .plots import render_all, skipped_plots

        plots = render_all(rep)
        for name, why in skipped_plots(rep).items():
            print(f"plot {name} not drawn: {why}", file=sys.stderr)
    if args.plots:
        from pathlib import Path

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
