"""The folders of ``harness/`` show the trust boundary, and the imports keep to it (parsed, never imported).

    candidate/  in the sandbox, beside candidate code   imports only candidate/, wire/, measure/
    build/      in the sandbox, builds candidate code   imports only build/, measure/ and candidate.load
    judge/      the trusted judge: seeds, expected       imports only judge/, wire/, measure/, scoring/
    wire/       the types both sides share              imports only wire/, measure/
    measure/    pure, secret-free primitives            imports only measure/
    scoring/    pure functions over records             imports only scoring/, measure/ and judge.adversarial
    sandbox/    the parent's launcher                   imports only sandbox/
    harness/*.py  the parent (Evaluator)                may import any of them

Every import counts, a function's lazy one too. A new module goes in the folder of whoever runs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"
DOMAINS = ("candidate", "build", "judge", "wire", "measure", "scoring", "sandbox")
PARENT = "parent"  # the modules directly in harness/
PARENT_MODULES = {"__init__", "runner", "children", "builder", "builds", "judges", "workers", "assemble", "eval", "errors",
                  "device_check", "host_peaks", "roofline_bound"}

ALLOWED: dict[str, set[str]] = {
    "candidate": {"candidate", "wire", "measure"},
    "build": {"build", "measure", "harness.candidate.load"},
    "judge": {"judge", "wire", "measure", "scoring"},
    "wire": {"wire", "measure"},
    "measure": {"measure"},
    "scoring": {"scoring", "measure", "harness.judge.adversarial"},
    "sandbox": {"sandbox"},
}


def domain(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in DOMAINS else PARENT


def module_name(path: Path) -> str:
    parts = list(path.relative_to(HARNESS.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (HARNESS.parent / rel).with_suffix(".py").is_file() or (HARNESS.parent / rel / "__init__.py").is_file()


def harness_imports(module: str, source: str, is_package: bool = False) -> set[str]:
    """The harness modules ``source`` (the text of ``module``) imports, anywhere in it."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names if is_module(f"{target}.{a.name}"))
    return {m for m in found if m == "harness" or m.startswith("harness.")}


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    mine = domain(module)
    if mine == PARENT:
        return []
    allowed = ALLOWED[mine]
    bad = []
    for target in sorted(harness_imports(module, source, is_package)):
        theirs = domain(target)
        if theirs in allowed or target in allowed or any(target.startswith(a + ".") for a in allowed if "." in a):
            continue
        bad.append(f"{module} ({mine}) imports {target} ({theirs})")
    return bad


def harness_files() -> list[Path]:
    return [p for p in sorted(HARNESS.rglob("*.py"))
            if p.relative_to(HARNESS).parts[0] not in ("fixtures", "examples")]


def test_every_import_keeps_to_the_trust_boundary():
    bad = []
    for path in harness_files():
        bad += violations(module_name(path), path.read_text(), path.name == "__init__.py")
    assert not bad, "imports across the trust boundary (see this test's docstring):\n" + "\n".join(bad)


def test_the_parent_keeps_only_its_own_modules_at_the_top():
    """Everything else lives in the folder of whoever runs it; no module is left (or re-added) at an old flat path."""
    top = {p.stem for p in HARNESS.glob("*.py")}
    assert top == PARENT_MODULES, f"harness/*.py: {sorted(top - PARENT_MODULES)} belong in a folder"
    assert {p.name for p in HARNESS.iterdir() if (p / "__init__.py").is_file()} >= set(DOMAINS)


def test_the_check_fails_on_a_violating_import():
    """The rules bite: each of these, added to a module of that folder, is reported."""
    cases = {
        ("harness.candidate.worker", "from ..judge.judge import Judge\n"): "harness.judge.judge",
        ("harness.candidate.guards", "def f():\n    from .. import runner\n"): "harness.runner",
        ("harness.candidate.worker", "from ..scoring.protocols import VERIFIED\n"): "harness.scoring.protocols",
        ("harness.candidate.worker", "import harness.judge.inputs\n"): "harness.judge.inputs",
        ("harness.judge.judge", "from ..candidate.worker import _pre_call\n"): "harness.candidate.worker",
        ("harness.judge.judge", "from ..candidate import worker\n"): "harness.candidate.worker",
        ("harness.wire.messages", "from ..judge.inputs import TrialSpec\n"): "harness.judge.inputs",
        ("harness.wire.shm", "from harness.candidate.load import import_candidate\n"): "harness.candidate.load",
        ("harness.measure.timing", "from ..wire.conn import Conn\n"): "harness.wire.conn",
        ("harness.build.build", "from ..judge.inputs import seeds_needed\n"): "harness.judge.inputs",
    }
    for (module, source), target in cases.items():
        assert any(target in v for v in violations(module, source)), (module, source)
    assert not violations("harness.candidate.worker", "from ..measure.device import Clock\nfrom ..wire import shm\n")
    assert not violations("harness.runner", "from .judge.inputs import seeds_needed\n")
