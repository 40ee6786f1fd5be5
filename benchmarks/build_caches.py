"""What the build caches save on one CUDA ``load_inline`` extension: compile seconds per translation unit.

    python benchmarks/build_caches.py --out DIR [--source harness/examples/cuda/relu.py]

Four builds of one kernel, each in a fresh process and extensions folder, sharing an object cache and
a PCH folder that start empty (harness/compile_launcher.py, harness/build.py):

1. cold:           nothing cached; this build starts the PCH maker in the background and does not wait
2. new name:       another extension name (so main.cpp's module name differs) and a one-line kernel
                   change, after the PCH is ready: main.cpp compiled with the PCH, cuda.cu compiled
3. kernel change:  one more line changed in the CUDA source: main.cpp reused, cuda.cu compiled
4. Python change:  only the Python around the kernel differs: nothing compiled

Needs nvcc and torch's headers, not a GPU: with a CPU-only torch the link step fails (no CUDA
libraries to link against) and the compile times are still what a GPU host's build would spend, on
this host's cores. Writes build_caches.md / .json under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ["cold", "new name", "kernel change", "Python change"]


def kernel_source(path: Path) -> tuple[str, str, list[str]]:
    """(cpp declarations, CUDA source, function names) of a harness example's load_inline call."""
    text = path.read_text()
    cuda = re.search(r'_CUDA = r"""(.*?)"""', text, re.S).group(1)
    cpp = re.search(r'_CPP = r?"""(.*?)"""', text, re.S) or re.search(r'_CPP = "(.*?)"', text, re.S)
    funcs = re.findall(r'functions=\[([^\]]*)\]', text)[0]
    return cpp.group(1), cuda, [f.strip().strip("\"'") for f in funcs.split(",") if f.strip()]


def build_once(step: int, source: str, objects: Path, pch: Path) -> dict:
    """One build in this process (run by main in a child process per step)."""
    import torch.utils.cpp_extension as cx

    if cx.CUDA_HOME is None:  # a CPU-only torch: point it at the toolkit so the compile steps run
        nvcc = subprocess.run(["which", "nvcc"], capture_output=True, text=True).stdout.strip()
        cx.CUDA_HOME = str(Path(os.path.realpath(nvcc)).parent.parent) if nvcc else None
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    sys.path.insert(0, str(ROOT))
    from harness.build import enable_build_caches

    enable_build_caches(pch, objects, timeout_s=600)
    cpp, cuda, funcs = kernel_source(Path(source))
    name = "kv_bench_ext" if step < 1 else "kv_bench_ext2"
    cuda += "".join(f"\n// change {i}\n" for i in range(min(step, 2)))
    t0 = time.perf_counter()
    err = ""
    try:
        cx.load_inline(name, cpp_sources=cpp, cuda_sources=cuda, functions=funcs,
                       build_directory=tempfile.mkdtemp(prefix="kvbench-"), verbose=False)
    except Exception as e:  # noqa: BLE001 - the link fails on a CPU-only torch
        err = str(e).strip().splitlines()[-3:]
    return {"seconds": time.perf_counter() - t0, "error": err}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--source", default=str(ROOT / "harness/examples/cuda/relu.py"))
    ap.add_argument("--step", type=int, default=None, help=argparse.SUPPRESS)  # internal: one build
    ap.add_argument("--cache", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step is not None:
        r = build_once(args.step, args.source, args.cache / "objects", args.cache / "pch")
        print(json.dumps(r))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        log = cache / "objects" / "compiles.jsonl"
        for step, label in enumerate(STEPS):
            if step == 1:  # wait for the PCH the first build started
                deadline = time.monotonic() + 900
                while not list((cache / "pch").glob("*/torch/extension.h.gch")) and time.monotonic() < deadline:
                    time.sleep(2)
            before = len(log.read_text().splitlines()) if log.exists() else 0
            src_step = 2 if step == 3 else step  # Python change: step 2's sources, a new extensions folder
            r = subprocess.run([sys.executable, __file__, "--out", str(args.out), "--source", args.source,
                                "--step", str(src_step), "--cache", str(cache)],
                               capture_output=True, text=True, timeout=1800)
            res = json.loads(r.stdout.strip().splitlines()[-1])
            units = [json.loads(x) for x in log.read_text().splitlines()[before:]] if log.exists() else []
            rows.append({"step": label, "build_s": res["seconds"], "error": res["error"],
                         "units": [{k: u[k] for k in ("unit", "hit", "seconds", "rc")} for u in units]})
            print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "build_caches.json").write_text(json.dumps(rows, indent=1))
    lines = [f"Build caches on {platform.node()} ({os.cpu_count()} cores), one CUDA load_inline extension "
             f"({Path(args.source).name}); generated by `benchmarks/build_caches.py`.", "",
             "| build | wall s | main.cpp | cuda.cu | note |", "|---|---|---|---|---|"]
    for r in rows:
        def cell(unit, units=r["units"]):
            us = [u for u in units if u["unit"] == unit]
            if not us:
                return "not run (the extension's build was already complete)"
            u = us[-1]
            return "reused" if u["hit"] else f"compiled {u['seconds']:.1f} s" + ("" if u["rc"] == 0 else " (failed)")
        note = "link failed: " + " ".join(r["error"])[-120:] if r["error"] else ""
        lines.append(f"| {r['step']} | {r['build_s']:.1f} | {cell('main.cpp')} | {cell('cuda.cu')} | {note} |")
    text = "\n".join(lines) + "\n"
    (args.out / "build_caches.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
