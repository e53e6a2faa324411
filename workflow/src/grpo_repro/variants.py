"""The GRPO variants of the paper, one record each (Sec. 3-5: Thm 1-2, 4-5, Sec. 5, Lemma 2, Thm 9).

A variant is fixed by two choices (docs/theory.md Sec. 2-3):

* its KL anchor: `reference` pi_ref (grpo, Thm 1-2), `previous` pi_{n-1}, the policy that sampled
  the batch (mirror, Thm 4-5), or `two_kl` both, beta [alpha KL(pi || pi_ref) + (1 - alpha)
  KL(pi || pi_{n-1})], whose minimiser is the Gibbs tilt of the geometric mean
  pi_ref^alpha pi_{n-1}^(1-alpha) (Lemma 2, Thm 9); alpha is the caller's (a sweep, a config key);
* its advantage: mean + std, eq. (4), or mean only, A = r - p (Dr. GRPO, Sec. 5).

Every stage reads this module: the PoS maps, the oracle and the fixed points (grpo_repro.dynamics),
the trainer (grpo_repro.train.trl_variant.trl_settings), the figures, the report's overlay, the
fixed-point stage. Each record is a file of its own, variant_records/<name>.yaml (data, not code):
a new variant that combines an existing anchor and advantage is that one file (the config schema
reads its name from the registry, grpo_repro.config_checks.load_schema; grpo_repro.style draws an
unlisted variant in a colour of its own), and the workflow reruns only the jobs that read that
record (workflow/rules/common.smk `code(..., variants=)`). A record says what a variant does, never
how it looks: labels and colours live in grpo_repro.style, which only plots read, so a recolour
reruns plot jobs only. VARIANTS holds the records in their `order`; lookups read VARIANTS at call
time, so a test may extend it (tests/unit/test_variants.py's fixture). Output files list the
variants in it. Callers pass the record itself (`v`) down to where its choices act, the advantage's
weights (grpo_repro.dynamics.oracle.weights, finite_group, oracle_sgd.group_advantage, TRL's
scale_rewards) and the anchor's map, and ask it what its anchor implies (`ref_anchored`,
`prev_anchored`, `two_kl`, `kl_terms`, `fixed_point_beta`, `kl_weights`) rather than pass flags or
compare names.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import yaml

ANCHORS = ("reference", "previous", "two_kl")
RECORDS = Path(__file__).with_name("variant_records")  # one <name>.yaml per variant


@dataclass(frozen=True)
class Variant:
    name: str
    anchor: str  # one of ANCHORS
    mean_only: bool  # A = r - p (Dr. GRPO) instead of eq. (4)'s (r - p)/sqrt(p(1-p)+eps)
    trained: bool  # the trainer implements it: a value of the config key `variants`

    def __post_init__(self):
        if self.anchor not in ANCHORS:
            raise ValueError(f"variant {self.name}: anchor {self.anchor!r} not one of {ANCHORS}")
        if not (isinstance(self.mean_only, bool) and isinstance(self.trained, bool)):
            raise ValueError(f"variant {self.name}: mean_only and trained are true or false")

    @property
    def ref_anchored(self) -> bool:
        """Its KL anchor is pi_ref alone (grpo, dr_grpo: Thm 1-3): the map h, whose fixed points
        predict a plateau."""
        return self.anchor == "reference"

    @property
    def prev_anchored(self) -> bool:
        """Its KL anchor is pi_{n-1} alone, the policy that sampled the batch (mirror: Thm 4-5):
        logit p_n rises by >= 1/beta a step, no interior fixed point."""
        return self.anchor == "previous"

    @property
    def two_kl(self) -> bool:
        """It anchors on both pi_ref and pi_{n-1}, weights (alpha, 1 - alpha) (Lemma 2, Thm 9)."""
        return self.anchor == "two_kl"

    def kl_terms(self, log_ref, log_prev, alpha=None) -> list[tuple]:
        """[(c_j, log anchor_j)] of beta sum_j c_j KL(pi || anchor_j) as the paper writes the
        objective: (1, log pi_ref), (1, log pi_{n-1}), or both with weights alpha, 1 - alpha
        (alpha as given, not validated: the caller's sweep value)."""
        if self.ref_anchored:
            return [(1.0, log_ref)]
        if self.prev_anchored:
            return [(1.0, log_prev)]
        return [(alpha, log_ref), (1.0 - alpha, log_prev)]

    def fixed_point_beta(self, beta: float, alpha: float | None = None) -> float | None:
        """The beta of the pi_ref-anchored map h (same normalisation, plateau_base) whose fixed
        points are this variant's: beta for the pi_ref anchor (Thm 2-3); alpha beta for the two-KL
        anchor (Thm 9 at p_n = p_{n-1} = p: logit p = logit p_ref + Delta_R/alpha +
        Omega(p)/(alpha beta), with Delta_R = 0, the Renyi terms vanishing when pi_{n-1}'s
        success- and failure-conditionals are pi_ref's, as in the Gibbs tilt of pi_ref); None for
        the previous-policy anchor (no interior fixed point, Thm 5)."""
        if self.prev_anchored:
            return None
        return float(beta) * (self.kl_weights(alpha)[0] if self.two_kl else 1.0)

    def kl_weights(self, alpha: float | None = None) -> tuple[float, float]:
        """(weight of KL(pi || pi_ref), weight of KL(pi || pi_{n-1})) of beta's KL term."""
        if self.ref_anchored:
            return 1.0, 0.0
        if self.prev_anchored:
            return 0.0, 1.0
        if alpha is None or not 0 < alpha < 1:
            raise ValueError("two-KL variants need alpha in (0, 1)")
        return float(alpha), 1.0 - float(alpha)


def record_file(name: str) -> Path:
    """The file of variant `name`'s record."""
    return RECORDS / f"{name}.yaml"


def load(path: Path) -> tuple[int, Variant]:
    """(order, record) of one record file; ValueError naming the file and the key at fault."""
    data = yaml.safe_load(path.read_text()) or {}
    keys = {f.name for f in fields(Variant)} - {"name"}
    required = {f.name for f in fields(Variant) if f.default is MISSING} - {"name"}
    unknown, missing = set(data) - keys - {"order"}, (required | {"order"}) - set(data)
    if unknown or missing:
        raise ValueError(
            f"{path}: variant record with unknown keys {sorted(unknown)} / missing keys "
            f"{sorted(missing)} (a record has order, {', '.join(sorted(keys))})"
        )
    try:
        return int(data.pop("order")), Variant(name=path.stem, **data)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def load_all(folder: Path = RECORDS) -> tuple[Variant, ...]:
    """Every record under `folder`, in their `order` (ties: by name)."""
    loaded = sorted((load(p) for p in folder.glob("*.yaml")), key=lambda o: (o[0], o[1].name))
    return tuple(v for _, v in loaded)


VARIANTS: tuple[Variant, ...] = load_all()


def names(trained: bool = False) -> tuple[str, ...]:
    """Names of the variants in registry order (trained: only those the trainer implements)."""
    return tuple(v.name for v in VARIANTS if v.trained or not trained)


def get(name: str, key: str = "variants") -> Variant:
    """The record of `name`; an unknown name raises ValueError naming `key` and the known names."""
    for v in VARIANTS:
        if v.name == name:
            return v
    raise ValueError(f"unknown variant {name!r} ({key}); known: {', '.join(names())}")


def find(anchor: str, mean_only: bool) -> Variant:
    """The first variant with this anchor and normalisation (e.g. the plain one of a family)."""
    for v in VARIANTS:
        if v.anchor == anchor and v.mean_only == mean_only:
            return v
    raise ValueError(f"no variant with anchor {anchor!r} and mean_only={mean_only}")


def plateau_base(name: str) -> Variant | None:
    """The reference-anchored variant whose fixed points p*, p*_G predict the plateau of `name`'s
    training run (same normalisation); None for the previous-policy anchor (no interior fixed
    point, p_n -> 1, Thm 5)."""
    v = get(name)
    return None if v.prev_anchored else find("reference", v.mean_only)
