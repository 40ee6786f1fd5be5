"""Neutral ground: pure, secret-free primitives that the judge and the candidate process both need to make and
record a measurement.

``device`` (device operations, the clock, the CPUs this process may use), ``timing`` and ``stats`` (the timers and
their summaries), ``precision`` (dtypes), ``record`` (the measurement record's types), ``guard_registry`` (every
guard's declaration and ``outcome``), ``compare`` (output comparison) and ``reference`` (building the reference Model
as KernelBench does, the TF32 switches). Nothing here holds a seed or an expected output, and nothing here imports
another part of the harness: the candidate side (``harness.candidate``), the judge (``harness.judge``), the wire
types and the parent all stand on it (``tests/test_harness_layout.py``).
"""
