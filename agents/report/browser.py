"""Render an HTML report in headless Chromium: a screenshot and the page's console messages.

Chromium started with ``--enable-logging=stderr`` writes every console message and uncaught
exception of the page as a ``CONSOLE`` line; the report logs nothing itself, so any such line is
an error. Used by the tests and to make the committed screenshot::

    python -m agents.report.browser report.html docs/report.png
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]?\s*(.*)")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class Rendered:
    returncode: int
    console: list[str]
    screenshot: Path | None
    stderr: str


def render(html: str | Path, screenshot: str | Path, width: int = 1400, height: int = 3000,
           timeout: float = 120.0, binary: str | None = None) -> Rendered:
    exe = binary or find_chromium()
    if exe is None:
        raise FileNotFoundError("no Chromium found (apt-get install -y chromium)")
    url = Path(html).resolve().as_uri()
    shot = Path(screenshot).resolve()
    shot.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
               f"--window-size={width},{height}", f"--screenshot={shot}", url]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    console = [m.group(1) for line in p.stderr.splitlines() if (m := CONSOLE.search(line))]
    return Rendered(returncode=p.returncode, console=console, screenshot=shot if shot.is_file() else None,
                    stderr=p.stderr)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m agents.report.browser REPORT.html SCREENSHOT.png", file=sys.stderr)
        return 2
    r = render(argv[0], argv[1])
    for line in r.console:
        print(f"console: {line}", file=sys.stderr)
    print(r.screenshot)
    return 0 if r.returncode == 0 and not r.console and r.screenshot else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
