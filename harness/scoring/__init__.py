"""Pure functions over records and sources, run by the parent and by reports, never in a sandbox.

``protocols`` (verdicts and scores of a stored record), ``intervals`` (speedup intervals), ``applicability`` (when
the TF32 baseline applies), ``reasons`` (one-line reasons from error text), ``shapes`` (the extra shapes: plan and
score) and ``static_scan`` (the candidate source's provenance). Imports only ``harness.measure`` and, for the
names and descriptions of the distributions the verified protocol scores, ``harness.judge.adversarial``.
"""
