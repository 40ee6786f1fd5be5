"""A CPU host's peak memory bandwidth and fp32 FLOP rate, measured once per host by the evaluator (trusted code).

A GPU's roofline comes from a datasheet table (``harness.roofline_bound.PEAKS``); a CPU host has none the harness
could trust, so the evaluator's own process measures it: the best rate of ``fill_`` and ``copy_`` over sizes from
cache-resident to DRAM-sized (bytes moved per second, a write-only fill counted once, a copy's read and write each),
and of fp32 matmuls, with every CPU this process may use. Cached as JSON under the evaluator's cache dir, keyed by
the host's identity; candidate processes see that folder read-only, so only the parent writes it.

The floor (``harness.roofline_bound``) divides output bytes by ``FLOOR_MARGIN`` times the measured bandwidth: a
measurement is a lower bound on the peak (a busy host, torch's dispatch at the small sizes, a kernel with streaming
stores), and a floor that errs high would call an honest kernel a hack.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import platform
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

# The floor assumes a kernel writes its outputs FLOOR_MARGIN times faster than the best rate measured: on the
# development host the cores' store limit (64 B a cycle each at most) is ~3.5x the measured rate (docs/isolation.md), and 8
# leaves room for a measurement taken on a busier host. A forged time is orders of magnitude below.
FLOOR_MARGIN = 8.0
VERSION = 1

_SIZES = (1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26)  # bytes per buffer: L1/L2-resident to DRAM
_MATMULS = (128, 256, 512, 1024)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_identity() -> dict:
    import torch

    return {"hostname": socket.gethostname(), "machine": platform.machine(), "cpu_model": _cpu_model(),
            "cpu_count": os.cpu_count() or 1, "usable_cpus": _cpus(), "torch": torch.__version__, "version": VERSION}


def _best_rate(op, work: float, reps: int, rounds: int = 5) -> float:
    """The best of ``rounds`` timings of ``reps`` calls, as work per second."""
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            op()
        best = min(best, time.perf_counter() - t0)
    return work * reps / best if best > 0 else 0.0


def measure() -> dict:
    """Best bytes/s (fill, copy) and fp32 FLOP/s (matmul) with every usable CPU; about a second or two."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(_cpus())
    try:
        bandwidth, flops = 0.0, 0.0
        with torch.no_grad():
            for nbytes in _SIZES:
                a, b = torch.ones(nbytes // 4), torch.empty(nbytes // 4)
                b.copy_(a)  # both touched before timing
                reps = max(2, min(400, (1 << 26) // nbytes))
                bandwidth = max(bandwidth, _best_rate(lambda b=b: b.fill_(2.0), nbytes, reps),
                                _best_rate(lambda a=a, b=b: b.copy_(a), 2 * nbytes, reps))
                del a, b
            for n in _MATMULS:
                x, y, out = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
                reps = max(2, min(200, (1 << 27) // n**3 + 1))
                flops = max(flops, _best_rate(lambda x=x, y=y, out=out: torch.mm(x, y, out=out), 2.0 * n**3, reps))
    finally:
        torch.set_num_threads(threads)
    # A child may run on every CPU of the host even if this process may not: the rate scales with them, erring low.
    scale = max(1.0, (os.cpu_count() or 1) / _cpus())
    return {"bandwidth": bandwidth * scale, "flops": flops * scale, "threads": _cpus(), "cpu_scale": scale}


def _valid(d: dict, ident: dict) -> bool:
    return (d.get("identity") == ident and all(isinstance(d.get(k), (int, float)) and math.isfinite(d[k]) and d[k] > 0
                                                 for k in ("bandwidth", "flops")))


def host_peaks(cache_dir: Path | str) -> dict:
    """The host's measured peaks (``bandwidth`` bytes/s, ``flops`` FLOP/s, ``measured_at``, ``identity``), from the
    cache under ``cache_dir`` or measured now (once: other evaluators on the host wait for it)."""
    ident = host_identity()
    key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]
    folder = Path(cache_dir) / "host_peaks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    with open(folder / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            d = json.loads(path.read_text())
            if _valid(d, ident):
                return d
        except (OSError, ValueError):
            pass
        d = {**measure(), "identity": ident, "measured_at": datetime.now(UTC).isoformat()}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(d, indent=1))
        os.replace(tmp, path)
        return d
