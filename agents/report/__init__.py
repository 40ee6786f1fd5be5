"""Reports over a run: the naive-vs-verified table, the waterfall that explains it, ablations,
plots and a static HTML file. Everything is computed from stored measurement records.

Public surface::

    agents.report.build_report(run_dir, protocols=None, turn_policy="final", compare=None) -> Report
    agents.report.build_headline(run_dir, **build_report_kwargs) -> HeadlineView   # report.headline_view
    agents.report.format_headline(view) -> str     # Markdown tables + notes (--headline)
    agents.report.print_report(report)            # rich tables
    agents.report.render_html(report) -> str      # one self-contained HTML file
    agents.report.save_plots(report, out_dir)     # PNGs
    agents.report.audit_run(run_dir) -> Audit     # kernels whose verdict changed, one block each
    agents.report.format_audit(audit) -> str
    python -m agents.report RUN [--headline] [--audit] [--json] [--html PATH] [--compare RUN2] [--plots DIR]
"""

import importlib

# The public names load on first use (PEP 562): ``python -m agents.report --help`` imports this package first, and
# build, plots and html import torch, numpy and matplotlib (seconds on a loaded host).
_HOME = {
    **dict.fromkeys(("Audit", "AuditEntry", "audit_record", "audit_run", "audit_threads", "format_audit"), ".audit"),
    **dict.fromkeys(("ALL", "HeadlineRow", "KernelChange", "KernelView", "Report", "TurnRow", "Waterfall",
                     "WaterfallStep", "build_headline", "build_report"), ".build"),
    **dict.fromkeys(("COLUMNS", "SUBSETS", "FlaggedProblem", "HeadlineSubset", "HeadlineSystem", "HeadlineView"),
                    ".headline"),
    **dict.fromkeys(("render_html", "write_html"), ".html"),
    **dict.fromkeys(("render_all", "save_plots"), ".plots"),
    **dict.fromkeys(("format_headline", "print_headline", "print_report"), ".text"),
    **dict.fromkeys(("COMPONENTS", "alone", "steps", "without"), ".waterfall"),
}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'agents.report' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


__all__ = [
    "ALL", "COLUMNS", "COMPONENTS", "SUBSETS", "Audit", "AuditEntry", "FlaggedProblem", "HeadlineRow",
    "HeadlineSubset", "HeadlineSystem", "HeadlineView", "KernelChange", "KernelView", "Report", "TurnRow",
    "Waterfall", "WaterfallStep", "alone", "audit_record", "audit_run", "audit_threads", "build_headline", "build_report",
    "format_audit", "format_headline", "print_headline", "print_report", "render_all", "render_html", "save_plots", "steps", "without", "write_html",
]
