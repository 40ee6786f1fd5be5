"""Input domains: what values a problem's inputs may legally take.

The verified protocol draws hidden inputs by scaling the problem's own inputs (x1, x3, x0.01, x-1).
A problem whose input is not a free real number declares a domain so that the hidden suite
only draws values the operation is defined on (a log of negatives or a KL divergence of
non-distributions would make the reference itself meaningless).
"""

from __future__ import annotations

from enum import StrEnum


class Domain(StrEnum):
    REAL = "real"  # any real number: every scale applies
    POSITIVE = "positive"  # strictly positive (log, sqrt, divisor): no negation
    NONNEGATIVE = "nonnegative"  # >= 0 (e.g. variances): no negation
    UNIT_INTERVAL = "unit_interval"  # [0, 1] (BCE predictions): no x3, no negation
    PROBABILITY = "probability"  # rows sum to 1 (softmax outputs): fresh seeds only
    LABELS = "labels"  # integer class indices: never scaled
    MASK = "mask"  # boolean or 0/1 mask: never scaled
    SIGN = "sign"  # +-1 targets (hinge loss): never scaled
    SYMMETRIC = "symmetric"  # symmetric matrix: structure kept by any scale
    LOWER_TRIANGULAR = "lower_triangular"
    UPPER_TRIANGULAR = "upper_triangular"
    DIAGONAL = "diagonal"  # only the diagonal is meaningful


# Which hidden scales each domain admits. The protocol maps its named distributions through this.
ALLOWED_SCALES: dict[Domain, tuple[float, ...]] = {
    Domain.REAL: (1.0, 3.0, 0.01, -1.0),
    Domain.POSITIVE: (1.0, 3.0, 0.01),
    Domain.NONNEGATIVE: (1.0, 3.0, 0.01),
    Domain.UNIT_INTERVAL: (1.0, 0.01),
    Domain.PROBABILITY: (1.0,),
    Domain.LABELS: (1.0,),
    Domain.MASK: (1.0,),
    Domain.SIGN: (1.0,),
    Domain.SYMMETRIC: (1.0, 3.0, 0.01, -1.0),
    Domain.LOWER_TRIANGULAR: (1.0, 3.0, 0.01, -1.0),
    Domain.UPPER_TRIANGULAR: (1.0, 3.0, 0.01, -1.0),
    Domain.DIAGONAL: (1.0, 3.0, 0.01, -1.0),
}


def allowed_scales(domain: str | Domain) -> tuple[float, ...]:
    return ALLOWED_SCALES[Domain(domain)]
