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

from .audit import Audit, AuditEntry, audit_record, audit_run, audit_threads, format_audit
from .build import (
    ALL,
    HeadlineRow,
    KernelChange,
    KernelView,
    Report,
    TurnRow,
    Waterfall,
    WaterfallStep,
    build_headline,
    build_report,
)
from .headline import COLUMNS, SUBSETS, FlaggedProblem, HeadlineSubset, HeadlineSystem, HeadlineView
from .html import render_html, write_html
from .plots import render_all, save_plots
from .text import format_headline, print_headline, print_report
from .waterfall import COMPONENTS, alone, steps, without

__all__ = [
    "ALL", "COLUMNS", "COMPONENTS", "SUBSETS", "Audit", "AuditEntry", "FlaggedProblem", "HeadlineRow",
    "HeadlineSubset", "HeadlineSystem", "HeadlineView", "KernelChange", "KernelView", "Report", "TurnRow",
    "Waterfall", "WaterfallStep", "alone", "audit_record", "audit_run", "audit_threads", "build_headline", "build_report",
    "format_audit", "format_headline", "print_headline", "print_report", "render_all", "render_html", "save_plots", "steps", "without", "write_html",
]
