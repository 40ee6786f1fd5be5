"""The HTML report renders in headless Chromium with no console messages (the page logs none, so
any message is an error or an uncaught exception)."""

from __future__ import annotations

import os

import pytest

from agents.report import build_report, write_html
from agents.report.browser import find_chromium, render
from agents.report.synthetic import write_synthetic_run

# Skipped only outside CI: in CI (CI set) a missing browser fails the test instead.
pytestmark = pytest.mark.skipif(find_chromium() is None and not os.environ.get("CI"),
                                reason="needs chromium (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    write_synthetic_run(d / "synth")
    return write_html(build_report(d / "synth", resamples=100), d / "report.html")


def test_detector_sees_console_errors(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><html><head><link rel="icon" href="data:,"></head><body>'
                   '<script>console.error("boom"); notDefined();</script></body></html>')
    r = render(bad, tmp_path / "bad.png", height=400)
    assert any("boom" in c for c in r.console), r.stderr[-2000:]
    assert any("notDefined" in c for c in r.console)


def test_report_renders_without_console_errors(html, tmp_path):
    r = render(html, tmp_path / "report.png")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.console == [], r.console
    assert r.screenshot is not None and r.screenshot.stat().st_size > 20_000
    assert r.screenshot.read_bytes()[:4] == b"\x89PNG"
