"""Which candidate tensor holds which reference parameter, so perturbed values reach both sides.

The verified protocol loads random values into the reference's parameters (a kernel that hard-codes a
LayerNorm weight of ones or a zero bias must fail). An honest candidate may name its own parameters
differently (``weight`` for the reference's ``ln.weight``), so values go by a mapping, resolved in
this order for the parameters still unmapped: same name and shape; then the same last name component and shape,
unique on both sides (``bn.weight`` and ``weight``); then shapes in declaration order
(when the remaining shape sequences are identical); then shapes that are unique on both sides.

* Every reference parameter mapped: perturb both sides through the mapping (random parameters by the verified
  construction seed, which builds both sides; constants by loading values into both, see
  ``harness.inputs.verified_parameters``).
* Some reference parameters left, and the candidate has nothing left that could hold them: the
  candidate does not keep those values as tensors at all (it hard-codes or drops them), so the
  reference is perturbed there alone, which is exactly the case the perturbation exists for.
* Otherwise (leftovers on both sides, no safe pairing): no perturbation for this kernel, recorded
  as skipped; perturbing one side only would fail an honest kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParamMapping:
    pairs: dict[str, str] = field(default_factory=dict)  # candidate name -> reference name
    reference_only: list[str] = field(default_factory=list)  # perturbed in the reference alone
    skipped: str | None = None  # why no perturbation at all
    loaded: list[str] = field(default_factory=list)  # candidate tensors the values were loaded into

    def to_json(self) -> dict:
        return {"pairs": self.pairs, "reference_only": self.reference_only, "skipped": self.skipped,
                "loaded": self.loaded}


Entry = tuple[str, tuple[int, ...]]


def map_parameters(reference: list[Entry], candidate: list[Entry]) -> ParamMapping:
    """``reference``/``candidate``: (name, shape) of floating parameters (and, for the candidate, floating
    buffers) in declaration order."""
    ref_left = list(reference)
    cand_left = list(candidate)
    pairs: dict[str, str] = {}

    def take(c: Entry, r: Entry) -> None:
        pairs[c[0]] = r[0]
        cand_left.remove(c)
        ref_left.remove(r)

    cand_by_name = {n: (n, s) for n, s in candidate}
    for r in list(ref_left):
        c = cand_by_name.get(r[0])
        if c is not None and c[1] == r[1] and c in cand_left:
            take(c, r)
    # same last name component and shape, one of a kind on both sides (the reference's bn.weight, the candidate's weight)
    def leaf(e: Entry) -> tuple[str, tuple[int, ...]]:
        return e[0].rsplit(".", 1)[-1], e[1]

    for r in list(ref_left):
        same_ref = [x for x in ref_left if leaf(x) == leaf(r)]
        same_cand = [x for x in cand_left if leaf(x) == leaf(r)]
        if len(same_ref) == 1 and len(same_cand) == 1:
            take(same_cand[0], r)
    if ref_left and [s for _, s in ref_left] == [s for _, s in cand_left]:
        for c, r in zip(list(cand_left), list(ref_left), strict=True):
            take(c, r)
    if ref_left:
        for r in list(ref_left):
            same_ref = [x for x in ref_left if x[1] == r[1]]
            same_cand = [x for x in cand_left if x[1] == r[1]]
            if len(same_ref) == 1 and len(same_cand) == 1:
                take(same_cand[0], r)
    if not ref_left:
        return ParamMapping(pairs=pairs)
    if not cand_left:
        return ParamMapping(pairs=pairs, reference_only=[n for n, _ in ref_left])
    return ParamMapping(skipped=(
        f"no safe mapping for reference parameter(s) {', '.join(n for n, _ in ref_left[:4])} among the candidate's "
        f"{', '.join(n for n, _ in cand_left[:4])}: parameters left unperturbed on both sides"))
