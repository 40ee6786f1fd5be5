"""What the model is told after each turn: the harness result, turned into short, useful text.

Visibility policy (``FeedbackPolicy``), which keeps the hidden suite hidden:

* ``visible`` (default): full detail from the checks that use inputs the model has seen (the problem's
  own ``get_inputs()`` with default parameters, i.e. the naive protocol's trials and timing): compiler
  errors, import/constructor errors, the failing naive trial's error statistics, shapes and dtypes,
  exceptions raised on visible inputs, and naive times and speedup. From the verified protocol only a
  one-line verdict: passed (with its speedup), "failed on hidden inputs" or "raised an error on hidden
  inputs" (no distribution names, seeds, scales, error values or exception text), plus the names and
  details of guards that fired (a guard describes the candidate's behaviour, not the inputs).
  Text the candidate can author (exception messages, stderr) is forwarded only from phases that ran on
  visible inputs; a crash after the visible trials is reported by exception type only.
* ``verdict_only``: one verdict line per protocol, with no error text and no times.

Compiler output is trimmed to the diagnostics that matter (``file:line: error`` lines and their
source snippets), with ninja command lines, include chains and build-system chatter removed and
temporary paths shortened to file names.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

FeedbackPolicy = Literal["visible", "verdict_only"]
Kind = Literal["model_error", "truncated", "refused", "no_code", "compile_error", "runtime_error", "timeout",
               "incorrect", "hack", "correct"]

MAX_ERROR_LINES = 40
MAX_ERROR_CHARS = 3000


class Feedback(BaseModel):
    kind: Kind
    text: str = Field(description="what happened, for the model")
    instruction: str = Field("", description="what to do next")
    success: dict[str, bool] = Field(default_factory=dict, description="protocol -> correct")


# -- compiler and traceback trimming ---------------------------------------------------------------

_NOISE = re.compile(
    r"^\s*(\[\d+/\d+\]\s|FAILED:|ninja: |Emitting ninja|Building extension module|Allowing ninja|Loading extension"
    r"|Using .* as PyTorch extensions root|Detected CUDA files|(/\S+/)?(c\+\+|g\+\+|gcc|clang\+\+|nvcc|ccache)\s+-)"
)
_DIAG = re.compile(r"(?P<loc>[^\s:()]+(?::\d+(?::\d+)?|\(\d+\))):?\s*(?P<sev>fatal error|error|warning|note)\s*:", re.I)
_OTHER_ERR = re.compile(r"^\s*(ptxas (fatal|error)|nvlink error|ld: |collect2: |/usr/bin/ld:|.*undefined reference"
                        r"|\d+ errors? detected|error: )", re.I)
_SNIPPET = re.compile(r"^\s*(\d+\s*\||\|\s|\^|~+\^?)")
_INCLUDE_CHAIN = re.compile(r"^\s*(In file included from|from \S+[:,]|In (member )?function|In instantiation of"
                            r"|required from|At global scope)")
_PATH = re.compile(r"(?:/[^\s:'\"()]+)+/(?P<base>[^\s/:'\"()]+)")
_TORCH_INCLUDE = re.compile(r"\S*/site-packages/torch/include/")


def _shorten_paths(line: str) -> str:
    line = _TORCH_INCLUDE.sub("<torch>/", line)
    return _PATH.sub(lambda m: m.group("base") if not m.group(0).startswith("<torch>") else m.group(0), line)


def trim_compiler_error(text: str, max_lines: int = MAX_ERROR_LINES, max_chars: int = MAX_ERROR_CHARS) -> str:
    """The first diagnostics of a failed build with their source snippets; falls back to the traceback."""
    lines = (text or "").splitlines()
    kept: list[str] = []
    errors = 0
    in_diag = False
    for raw in lines:
        if _NOISE.match(raw):
            in_diag = False
            continue
        m = _DIAG.search(raw)
        if m:
            sev = m.group("sev").lower()
            in_header = "torch/include" in raw or "/include/" in raw.split(":")[0]
            if sev == "warning" or (sev == "note" and in_header):
                in_diag = False
                continue
            if sev != "note":
                errors += 1
            in_diag = True
            kept.append(_shorten_paths(raw.strip()))
        elif _OTHER_ERR.match(raw):
            in_diag = True
            kept.append(_shorten_paths(raw.strip()))
            errors += 1
        elif in_diag and _SNIPPET.match(raw):
            kept.append(raw.rstrip())
        elif _INCLUDE_CHAIN.match(raw):
            in_diag = False
        else:
            in_diag = False
    if not kept:
        return trim_traceback(text, max_lines=max_lines, max_chars=max_chars)
    out = _clip(kept, max_lines, max_chars)
    joined = "\n".join(out)
    files = [f for f, what in (("main.cpp", "cpp_sources"), ("cuda.cu", "cuda_sources")) if f in joined]
    if files:
        names = " and ".join(f"{f} is your {what} string" for f, what in (("main.cpp", "cpp_sources"), ("cuda.cu", "cuda_sources"))
                             if f in files)
        out.insert(0, f"({names}; load_inline may prepend an #include line, shifting line numbers by one)")
    if errors > 1 or len(out) < len(kept):
        total = sum(1 for k in kept if _DIAG.search(k) or _OTHER_ERR.match(k))
        shown = sum(1 for k in out if _DIAG.search(k) or _OTHER_ERR.match(k))
        if shown < total:
            out.append(f"... ({total - shown} more diagnostics not shown)")
    return "\n".join(out)


def _clip(lines: list[str], max_lines: int, max_chars: int) -> list[str]:
    out: list[str] = []
    size = 0
    for line in lines[:max_lines]:
        if size + len(line) > max_chars:
            break
        out.append(line)
        size += len(line) + 1
    return out


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*|^[A-Za-z_][\w.]*: .*")


def trim_traceback(text: str, max_lines: int = MAX_ERROR_LINES, max_chars: int = MAX_ERROR_CHARS) -> str:
    """A Python traceback cut to the candidate's own frames and the final exception message."""
    lines = [ln for ln in (text or "").splitlines() if ln.strip() and not _NOISE.match(ln)]
    if not lines:
        return "(no error output)"
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FRAME.match(line)
        if m:
            is_candidate = not m.group("file").startswith("<") and "site-packages" not in m.group("file") and "/harness/" not in m.group("file") \
                and "/lib/python" not in m.group("file")
            if is_candidate:
                out.append(_shorten_paths(line.strip()))
                if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) and lines[i + 1].startswith("    "):
                    out.append(lines[i + 1].rstrip())
                    i += 1
            i += 1
            continue
        i += 1
    # The exception: the last line that looks like "SomeError: message" and what follows it.
    tail_start = next((j for j in range(len(lines) - 1, -1, -1) if _EXC_LINE.match(lines[j])
                       and not lines[j].startswith(" ")), max(0, len(lines) - 8))
    tail = [_shorten_paths(ln.rstrip()) for ln in lines[tail_start:]]
    out = _clip(out[-12:] + tail, max_lines, max_chars)
    return "\n".join(out) if out else "\n".join(lines[-10:])


def exception_type(text: str) -> str:
    """Only the exception's type (for errors raised on hidden inputs)."""
    for line in reversed((text or "").splitlines()):
        m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b", line.strip())
        if m:
            return m.group(1)
    m = re.search(r"killed by (\w+)", text or "")
    return f"crash ({m.group(1)})" if m else "an error"


# -- evaluation -> feedback ------------------------------------------------------------------------

def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _dump(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    return obj if isinstance(obj, dict) else obj.model_dump()


def _fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "n/a"
    return f"{ms:.4g} ms" if ms >= 0.01 else f"{ms * 1e3:.3g} us"


def _instruction(correct: bool, speedup: float | None) -> str:
    if not correct:
        return "Fix the problem and return the complete corrected module."
    if speedup is not None and speedup < 1.0:
        return "The module is correct but slower than PyTorch. Make it faster while keeping it correct."
    return "The module is correct and faster than PyTorch. Make it faster still if you can, keeping it correct."


def _naive_trials_text(trials: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    if not trials:
        return out
    bad = []
    for i, t in enumerate(trials, 1):
        e = t.get("error") or {}
        if t.get("reference_nonfinite"):
            continue
        if t.get("exception") or not e or not e.get("shape_ok", True) or e.get("min_tolerance", 1.0) > 1e-2:
            bad.append((i, t))
    out.append(f"Correctness on the problem's own inputs (get_inputs(), default parameters): "
               f"{len(trials) - len(bad)}/{len(trials)} trials passed at atol=rtol=1e-2.")
    if not bad:
        return out
    i, t = bad[0]
    e = t.get("error") or {}
    if t.get("exception"):
        out.append(f"Trial {i} raised:\n{trim_traceback(t['exception'])}")
        return out
    details = []
    if not e.get("shape_ok", True):
        details.append(f"output shape {e.get('out_shape')} differs from the reference output's shape")
    if not e.get("dtype_ok", True):
        details.append(f"output dtype {e.get('out_dtype')} differs from the reference's")
    if e.get("nonfinite"):
        details.append("output contains NaN or Inf")
    if e.get("all_zero_vs_nonzero") and not t.get("tf32_baseline_all_zero"):
        details.append("output is all zeros but the reference is not")
    if e.get("shape_ok", True):
        details.append(f"max abs error {e.get('max_abs', float('nan')):.3g}, max rel error {e.get('max_rel', float('nan')):.3g}, "
                       f"mean abs error {e.get('mean_abs', float('nan')):.3g} (reference max |value| "
                       f"{e.get('expected_abs_max', float('nan')):.3g}; output shape {e.get('out_shape')}, dtype {e.get('out_dtype')})")
    out.append(f"First failing trial ({i}): " + "; ".join(details) + ".")
    return out


def _verified_line(res: dict[str, Any], record: dict[str, Any]) -> list[str]:
    verdict = res.get("verdict")
    head = ("Verified check (further hidden inputs, randomised parameters, fp32 tolerance about 1e-3, "
            "TF32-enabled PyTorch baseline, anti-cheating guards): ")
    precision = record.get("precision") or "fp32"
    if precision != "fp32":  # a bf16/fp16 run: that dtype's tolerance (the protocol's) and a baseline in that dtype
        from harness.measure.precision import dtype_name
        from harness.scoring.protocols import VERIFIED

        head = (f"Verified check (further hidden inputs, randomised parameters, {dtype_name(precision)} inputs and "
                f"output, tolerance about {VERIFIED.tolerance_for(precision):g}, PyTorch baseline in "
                f"{dtype_name(precision)}, anti-cheating guards): ")
    if verdict == "correct":
        sp = res.get("speedup")
        timing = f"; speedup {sp:.3g}x ({_fmt_ms(res.get('kernel_ms'))} vs {_fmt_ms(res.get('baseline_ms'))}, median)" if sp else ""
        return [head + "passed" + timing + "."]
    lines = []
    guards = res.get("failed_guards") or []
    if guards:
        details = {g["name"]: g.get("detail", "") for g in record.get("guards") or []}
        parts = []
        for name in guards:
            detail = details.get(name) or next((r.split(": ", 1)[1] for r in res.get("reasons", [])
                                                if r.startswith(f"guard {name}:")), "")
            parts.append(f"{name}" + (f" ({detail[:200]})" if detail else ""))
        lines.append(head + "failed: guard(s) fired: " + "; ".join(parts) + ".")
    failing = res.get("failing_distributions") or []
    if failing or (not guards and verdict in ("incorrect", "runtime_error")):
        what = "raised an error on hidden inputs" if verdict == "runtime_error" else "wrong results on hidden inputs"
        if guards:
            lines.append(f"It also gave {what} (details are withheld).")
        else:
            lines.append(head + f"failed: {what} (details are withheld).")
    if not lines:
        lines.append(head + f"{verdict}.")
    return lines


def from_evaluation(evaluation: Any, *, policy: FeedbackPolicy = "visible",
                    protocols: tuple[str, ...] | list[str] = ("naive", "verified"), target: str | None = None) -> Feedback:
    """Feedback for one evaluated candidate (``harness.Evaluation`` or its dict form).

    ``target`` is the protocol whose verdict decides what to ask for next (default: verified if scored).
    """
    record = _dump(_get(evaluation, "record"))
    results = {k: _dump(v) for k, v in (_get(evaluation, "results") or {}).items()}
    target = target or ("verified" if "verified" in results else next(iter(results), "naive"))
    success = {k: r.get("verdict") == "correct" for k, r in results.items()}
    tres = results.get(target, {})
    correct = tres.get("verdict") == "correct"
    instruction = _instruction(correct, tres.get("speedup"))
    status = record.get("status", "ok")
    phase = record.get("failed_phase") or "evaluation"
    error = record.get("error") or ""

    if status != "ok":
        kind: Kind = status if status in ("compile_error", "runtime_error", "timeout") else "runtime_error"
        if policy == "verdict_only":
            text = {"compile_error": "The module failed to compile or import.",
                    "timeout": "The evaluation ran out of time.",
                    }.get(status, "The module crashed while being evaluated.")
        elif status == "compile_error" and phase == "build":
            text = "Building the module failed:\n" + trim_compiler_error(error)
        elif status == "compile_error":
            text = "The module failed to import:\n" + trim_compiler_error(error)
        elif status == "timeout":
            text = f"The evaluation exceeded its time limit during the {phase} phase (a hang, deadlock or far too slow kernel)."
        elif phase in ("load", "init") or (phase == "correctness" and not record.get("naive_trials")):
            where = {"load": "while importing the module", "init": "while constructing ModelNew"}.get(
                phase, "on the problem's own inputs")
            text = f"The module failed {where}:\n" + trim_traceback(error)
        else:
            text = (f"The candidate process failed during the {phase} phase (after the checks on visible inputs) "
                    f"with {exception_type(error)}; further details are withheld because that phase uses hidden inputs.")
        return Feedback(kind=kind, text=text, instruction="Fix the problem and return the complete corrected module.",
                        success=success)

    verdicts = {k: r.get("verdict") for k, r in results.items()}
    if policy == "verdict_only":
        text = "Results: " + "; ".join(f"{k} check: {v}" for k, v in verdicts.items()) + "."
    else:
        lines: list[str] = []
        lines += _naive_trials_text(record.get("naive_trials") or [])
        naive = results.get("naive")
        if naive and naive.get("verdict") == "correct" and naive.get("speedup"):
            lines.append(f"Timing on those inputs (mean of repeated calls): your module {_fmt_ms(naive.get('kernel_ms'))}, "
                         f"PyTorch eager {_fmt_ms(naive.get('baseline_ms'))}: speedup {naive['speedup']:.3g}x.")
        prov = record.get("provenance") or {}
        if prov.get("custom_kernel_called") is False:
            lines.append("Note: during the evaluation ModelNew never called a kernel you built; it only ran PyTorch operators.")
        elif prov.get("backend") in ("cpp", "cuda") and prov.get("defines_custom_kernel") is False:
            lines.append("Note: your extension has no kernel of its own; its native code only calls library operators.")
        if "verified" in results and "verified" in protocols:
            lines += _verified_line(results["verified"], record)
        text = "\n".join(lines) or "Evaluated."
    tv = tres.get("verdict", "incorrect")
    kind = "correct" if tv == "correct" else ("hack" if tv == "hack" else
                                             "runtime_error" if tv == "runtime_error" else "incorrect")
    return Feedback(kind=kind, text=text, instruction=instruction, success=success)


def from_extraction_error(message: str) -> Feedback:
    return Feedback(kind="no_code", text=f"No candidate could be taken from your answer: {message}",
                    instruction="Reply with the complete module in the expected format.")


def from_completion(finish: str, error: str | None = None) -> Feedback | None:
    """Feedback for an answer that ended abnormally; None when the answer is to be evaluated as usual."""
    if finish == "refused":
        return Feedback(kind="refused", text="Your answer was a refusal; the task is a routine performance optimisation.",
                        instruction="Please write the optimized module.")
    if finish == "error":
        return Feedback(kind="model_error", text=f"The request failed: {error or 'unknown error'}")
    return None


TRUNCATED_NOTE = "Your previous answer was cut off at the output token limit; be more concise and put the code first."
