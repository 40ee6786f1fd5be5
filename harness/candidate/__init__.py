"""The untrusted side: what runs inside the sandbox, beside candidate code.

``worker`` (the evaluation process, ``python -m harness.candidate.worker``), ``guards`` (its in-process evidence),
``load`` (importing a candidate source) and ``clock_peer`` (the harness's own process that the judge's clock
calibrates with, sandboxed and placed as a candidate is; no candidate code runs there). Imports only
``harness.wire``, ``harness.measure`` and itself, so nothing candidate code can reach from here holds a seed, an
expected output or the parent's state (``tests/test_harness_layout.py``).
"""
