"""Which candidate tensor holds which reference parameter, so perturbed values reach both sides.

The verified protocol loads random values into the reference's parameters (a kernel that hard-codes a
LayerNorm weight of ones or a zero bias must fail). An honest candidate may name its own parameters
differently (``weight`` for the reference's ``ln.weight``), so values go by a mapping, resolved in
this order for the parameters still unmapped: same name and shape; then the same last name component and shape,
unique on both sides (``bn.weight`` and ``weight``); then shapes in declaration order (when the remaining shape
sequences are identical and no pair contradicts the names' roles); then shapes that are unique on both sides; then
the same role and shape, unique on both sides. A role is what a name says: ``weight`` or ``gamma`` (a scale),
``bias`` or ``beta`` (a shift), as the leaf name or one of its underscore-separated words. An honest LayerNorm that
declared ``beta`` before ``gamma`` was once paired by declaration order, its affine parameters swapped, and called
incorrect: where the order contradicts the roles, the roles pair what they tell apart and the order is not used.
Roles come last otherwise, and only the plain words count (a red team's ``post_scale`` beside a GroupNorm's
``alpha`` took the norm's weight when ``scale`` was a role word, and a role pair taken early let declaration order
pair the rest wrongly).

What the candidate declares decides only where values are loaded on its side, never whether the reference is
perturbed (issue 30: decoy parameters once made the mapping fail and switched perturbation off on both sides):

* Reference parameters mapped: the candidate tensor receives the value (random parameters reach both sides by
  the verified construction seed, which builds both; layer-default constants by loading the spread into both,
  see ``harness.judge.inputs.verified_parameters``).
* Reference parameters left unmapped (the candidate holds nothing for them, or nothing the rules pair safely: a
  renamed tensor among same-shaped decoys or restructurings): the reference is perturbed there alone. A kernel that
  hard-codes the constant fails, whatever else it declares; an honest one that keeps the value only in a form the
  rules cannot pair (a fused or folded constant-initialised tensor) fails too, and the record names what it
  never received. Random parameters need no pairing when the candidate was built under the construction seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParamMapping:
    pairs: dict[str, str] = field(default_factory=dict)  # candidate name -> reference name
    reference_only: list[str] = field(default_factory=list)  # perturbed in the reference alone
    skipped: str | None = None  # records before issue 30: why no perturbation at all (no longer set)
    loaded: list[str] = field(default_factory=list)  # candidate tensors the values were loaded into

    def to_json(self) -> dict:
        return {"pairs": self.pairs, "reference_only": self.reference_only, "skipped": self.skipped,
                "loaded": self.loaded}


Entry = tuple[str, tuple[int, ...]]

# Words that name an affine parameter's role, in a leaf name or one of its underscore-separated parts.
ROLE_WORDS = {"weight": {"weight", "gamma"}, "bias": {"bias", "beta"}}


def _role(name: str) -> str | None:
    """``weight`` or ``bias`` when the leaf name says which and not both, else None."""
    words = set(name.rsplit(".", 1)[-1].lower().split("_"))
    roles = [role for role, names in ROLE_WORDS.items() if words & names]
    return roles[0] if len(roles) == 1 else None


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
    def by_role() -> None:
        for r in list(ref_left):
            role = _role(r[0])
            same_ref = [x for x in ref_left if x[1] == r[1] and _role(x[0]) == role]
            same_cand = [x for x in cand_left if x[1] == r[1] and _role(x[0]) == role]
            if role is not None and len(same_ref) == 1 and len(same_cand) == 1:
                take(same_cand[0], r)

    if ref_left and [s for _, s in ref_left] == [s for _, s in cand_left]:
        zipped = list(zip(list(cand_left), list(ref_left), strict=True))
        if any(None not in (_role(c[0]), _role(r[0])) and _role(c[0]) != _role(r[0]) for c, r in zipped):
            by_role()  # the order contradicts the names (beta declared before gamma): the names pair, not the order
        else:
            for c, r in zipped:
                take(c, r)
    if ref_left:
        for r in list(ref_left):
            same_ref = [x for x in ref_left if x[1] == r[1]]
            same_cand = [x for x in cand_left if x[1] == r[1]]
            if len(same_ref) == 1 and len(same_cand) == 1:
                take(same_cand[0], r)
    by_role()
    # Leftovers on both sides get no guess: a wrong pairing would fail an honest kernel, and no pairing at all
    # leaves the reference perturbed there alone, so no declaration spares a kernel the perturbation.
    return ParamMapping(pairs=pairs, reference_only=[n for n, _ in ref_left])
