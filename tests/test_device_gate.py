"""The device gate: a judge timing on a device and another judge preparing on it never overlap."""

import subprocess
import sys
import time

from harness.judge import gate as gate_module
from harness.judge.gate import DeviceGate

GATE_PY = gate_module.__file__

# The holder loads gate.py alone (no torch import through the harness package): a second process in a second.
HOLD = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("gate", sys.argv[4])
gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)
g = gate.DeviceGate(sys.argv[1], sys.argv[2])
with g.hold("prepare"):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def _holds(log):
    return [(int(p), what, float(a), float(b)) for p, what, a, b in (line.split() for line in log.read_text().splitlines())]


def test_a_hold_waits_for_another_processes_hold_to_end(tmp_path):
    gate, log = tmp_path / "gpu0.lock", tmp_path / "holds.log"
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(gate), str(log), "1.5", GATE_PY], stdout=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == "held"
    mine = DeviceGate(str(gate), str(log))
    t0 = time.monotonic()
    with mine.hold("timing"):
        waited = time.monotonic() - t0
    assert other.wait(timeout=30) == 0
    assert waited >= 1.0 and mine.waited_s >= 1.0  # it waited for the other's hold, and counted the wait
    (a, b) = sorted(_holds(log), key=lambda h: h[2])
    assert a[1] == "prepare" and b[1] == "timing" and a[3] <= b[2]  # one after the other, never both


def test_nested_holds_release_once_and_a_dead_holder_holds_nothing(tmp_path):
    gate, log = tmp_path / "gpu0.lock", tmp_path / "holds.log"
    g = DeviceGate(str(gate), str(log))
    g.acquire("timing")
    with g.hold("prepare"):  # inside the outer hold: no second lock, no early release
        assert g.held
    assert g.held
    g.release()
    assert not g.held and len(_holds(log)) == 1
    killed = subprocess.Popen([sys.executable, "-c", HOLD, str(gate), str(log), "60", GATE_PY], stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().strip() == "held"
    killed.kill()
    killed.wait()
    t0 = time.monotonic()
    with g.hold("timing"):
        pass
    assert time.monotonic() - t0 < 5  # the kernel dropped the dead process's lock


def test_without_a_gate_file_holding_is_free(monkeypatch):
    monkeypatch.delenv("KV_DEVICE_GATE", raising=False)
    g = DeviceGate()
    with g.hold("timing"):
        assert not g.held
    assert g.waited_s == 0.0
