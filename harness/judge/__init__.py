"""The judge: a trusted process, one per (evaluator, problem), that holds the seeds and the expected outputs.

``judge`` (the process, ``python -m harness.judge.judge FD``), ``inputs`` (trial plans, input draws, parameter
perturbation), ``adversarial`` (the adversarial distributions), ``params`` (mapping the reference's parameters onto
the candidate's), ``tf32_truncation`` (the truncated-TF32 reference) and ``peer_link`` (its end of the clock peer).
Never imports ``harness.candidate`` or ``harness.build``: what it shares with the candidate process lives in
``harness.wire`` and ``harness.measure`` (``tests/test_harness_layout.py``).
"""
