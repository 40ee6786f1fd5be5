"""Peaks of nvidia-smi's per-process samples (``--query-compute-apps=pid,used_memory --format=csv,noheader,nounits``,
then a line ``device, MiB`` of ``--query-gpu=memory.used``, one blank line between samples): each process's peak, the
peak of all processes together, and the device's own reading's peak, in MiB.

    python benchmarks/gpu_memory_peaks.py SAMPLES.csv
"""

from __future__ import annotations

import argparse
import sys


def peaks(text: str) -> tuple[dict[str, int], int]:
    per: dict[str, int] = {}
    total, now = 0, 0
    for line in text.splitlines() + [""]:
        if not line.strip():
            total, now = max(total, now), 0
            continue
        pid, used = (x.strip() for x in line.split(",")[:2])
        if used.isdigit():
            per[pid] = max(per.get(pid, 0), int(used))
            now += int(used) if pid != "device" else 0
    return per, total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samples", help="the sampling loop's output (benchmarks/h200_session.sh, STEPS=judge_memory)")
    per, total = peaks(open(ap.parse_args().samples).read())
    for pid, mib in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{'device (memory.used)' if pid == 'device' else 'pid ' + pid}: peak {mib} MiB")
    print(f"all processes together: peak {total} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
