"""The shortcut test over trained models: does a map's cue share reveal that a model takes the cue
as a shortcut? (unit: a trained model; replicate: a training seed)

Each model's score on a map is its mean cue share over the test images as generated
(:mod:`infsa_viz.evaluation.shortcut.measure`). From the models of every variant in both training settings (``p10``: the cue
useless; ``p100``: the cue a shortcut) paired by seed, :func:`shortcut_tables` gives, per map:

* **rise**: p100 − p10 score of the same variant and seed, mean with its t-interval and p-value;
* **difference** of that rise between each InfSA variant and softmax, paired by seed, Holm over the
  family of distinct explanation maps (each group of identical maps counted once), with the
  detectable difference (80 % power at the Holm-adjusted level α/m);
* **detection**: the AUROC of p100 vs p10 scores with its interval
  (:func:`~.detection.detection_auroc`), and the leave-one-seed-out false-positive rate of "reliance
  detected" on useless-cue models (:func:`~.detection.held_out_detection`);
* **image level**: within each shortcut model, Spearman's ρ over images between the map's cue share
  and the cue's measured evidence; mean over models with a t-interval;
* **salience**: R² of the model × salience cell means by training regime and by salience
  (:func:`~.detection.factor_r2`) and the mean cue share of each cell, over the models measured at every
  salience (the control may run on a subset of seeds).

Every table carries the model-ignorant rows (role ``"model_ignorant"``: the edge map, the
intensity), the random floor and the evidence-oracle ceiling; each explanation map is compared with
the edge map on the same seeds (``beats_edge``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...evaluation.shortcut.measure import ModelCueShares
from ..paired import holm
from ..seed_stats import ALPHA, detectable_difference, seed_t_test
from .detection import detection_auroc, factor_r2, held_out_detection

__all__ = ["EDGE", "SETTINGS", "ModelEntry", "distinct_maps", "shortcut_tables"]

#: The training settings: the useless cue (negatives) and the shortcut (positives).
SETTINGS = ("p10", "p100")
#: The model-ignorant control every explanation map must beat.
EDGE = "edge"
_POINTS = 100.0


@dataclass(frozen=True, eq=False)
class ModelEntry:
    """One trained model's measurement: where it comes from and its cue shares."""

    setting: str
    variant: str
    seed: int
    model: str
    shares: ModelCueShares

    def score(self, method: str, salience: str = "as_generated") -> float:
        """Mean cue share over the images (``nan`` where every image's share is undefined)."""
        values = self.shares.shares[salience][method]
        return float(np.nanmean(values)) if np.isfinite(values).any() else math.nan


def _r(value: Any, digits: int = 4) -> float | None:
    return None if value is None or not math.isfinite(float(value)) else round(float(value), digits)


def _t(values: Sequence[float], scale: float = _POINTS) -> dict[str, Any]:
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if not len(x):
        return {"n": 0}
    t = seed_t_test(x * scale)
    return {"mean": _r(t.mean), "low": _r(t.low), "high": _r(t.high), "sd": _r(t.sd), "p_value": _r(t.p_value, 6),
            "n": t.n}


def distinct_maps(entries: Sequence[ModelEntry], variant: str) -> dict[str, str]:
    """Method → the representative of its group of maps identical on *every* model of ``variant``
    (itself when it has no twin)."""
    mine = [e for e in entries if e.variant == variant]
    if not mine:
        return {}
    methods = list(mine[0].shares.methods)
    pairs = None
    for entry in mine:
        found = {(a, b) for group in entry.shares.identical for i, a in enumerate(group) for b in group[i + 1:]}
        pairs = found if pairs is None else pairs & found
    out = {m: m for m in methods}
    for a, b in sorted(pairs or set(), key=lambda p: (methods.index(p[0]), methods.index(p[1]))):
        out[b] = out[a]
    return out


def _paired(entries: Sequence[ModelEntry], variant: str, method: str, salience: str = "as_generated") -> dict[int, float]:
    """Seed → p100 − p10 score of ``variant``'s models of that seed."""
    by = {(e.setting, e.seed): e.score(method, salience) for e in entries if e.variant == variant}
    return {s: by[SETTINGS[1], s] - by[SETTINGS[0], s] for (setting, s) in by
            if setting == SETTINGS[0] and (SETTINGS[1], s) in by}


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    keep = np.isfinite(a) & np.isfinite(b)
    if keep.sum() < 3 or np.ptp(a[keep]) == 0 or np.ptp(b[keep]) == 0:
        return math.nan
    return float(spearmanr(a[keep], b[keep]).statistic)


def shortcut_tables(entries: Sequence[ModelEntry], *, roles: dict[str, str], baseline: str = "softmax",
                    alpha: float = ALPHA) -> dict[str, Any]:
    """Every table of the shortcut test (module doc) from the models' measurements.

    Args:
        entries: the measured models (both settings, paired by seed within a variant).
        roles: method → its registered role (``"explanation"``, ``"floor"``, ``"model_ignorant"``, ``"ceiling"``).
        baseline: the variant the others are compared with. Default ``"softmax"``.
        alpha: family-wise level of the difference calls. Default 0.05.

    Returns:
        JSON-ready ``{"distinct", "rise", "difference", "detection", "image_level", "salience"}``.
    """
    if not entries:
        raise ValueError("entries is empty; expected measured models of both settings")
    variants = list(dict.fromkeys(e.variant for e in entries))
    methods = list(entries[0].shares.methods)
    salience = max((list(e.shares.shares) for e in entries), key=len)  # the control's models hold every one
    distinct = {v: distinct_maps(entries, v) for v in variants}
    out: dict[str, Any] = {"distinct": {v: {m: r for m, r in d.items() if r != m} for v, d in distinct.items()}}

    rises = {(v, m): _paired(entries, v, m) for v in variants for m in methods}
    out["rise"] = []
    for v in variants:
        for m in methods:
            row = {"variant": v, "method": m, "role": roles.get(m), "same_map_as": distinct[v].get(m, m)
                   if distinct[v].get(m, m) != m else None, **_t(list(rises[v, m].values()))}
            edge = rises[v, EDGE]
            gap = [rises[v, m][s] - edge[s] for s in rises[v, m] if s in edge]
            row["beats_edge"] = None if roles.get(m) != "explanation" else bool(_t(gap).get("low") is not None
                                                                                 and _t(gap)["low"] > 0)
            out["rise"].append(row)

    family, rows = [], []
    for v in variants:
        if v == baseline:
            continue
        for m in methods:
            mine, theirs = rises[v, m], rises[baseline, m]
            seeds = sorted(set(mine) & set(theirs))
            diffs = [mine[s] - theirs[s] for s in seeds]
            row = {"variant": v, "baseline": baseline, "method": m, "role": roles.get(m), "seeds": seeds,
                   **_t(diffs)}
            duplicate = distinct[v].get(m, m) != m or distinct[baseline].get(m, m) != m
            row["in_family"] = roles.get(m) == "explanation" and not duplicate and len(seeds) >= 2
            if duplicate:
                row["same_map_as"] = {side: distinct[side][m] for side in (v, baseline) if distinct[side].get(m, m) != m}
            rows.append(row)
            if row["in_family"]:
                family.append(row)
    p = holm([r["p_value"] if r.get("p_value") is not None else math.nan for r in family]) if family else []
    for row, adjusted in zip(family, p, strict=True):
        row["p_holm"] = _r(adjusted, 6)
        row["call"] = ("higher" if row["mean"] > 0 else "lower") if adjusted < alpha else "not shown"
        sd = row.get("sd")
        row["detectable"] = _r(detectable_difference(sd, row["n"], alpha=alpha / len(family))) \
            if sd is not None and row["n"] >= 2 else None
    out["difference"] = {"family_size": len(family), "alpha": alpha, "rows": rows}

    out["detection"] = []
    for v in variants:
        for m in methods:
            scores = {s: [(e.seed, e.score(m)) for e in entries if e.variant == v and e.setting == s
                          and math.isfinite(e.score(m))] for s in SETTINGS}
            pos, neg = scores[SETTINGS[1]], scores[SETTINGS[0]]
            row: dict[str, Any] = {"variant": v, "method": m, "role": roles.get(m)}
            if len(pos) >= 2 and len(neg) >= 2:
                auc = detection_auroc([x for _, x in pos], [x for _, x in neg])
                held = held_out_detection([x for _, x in pos], [x for _, x in neg], [s for s, _ in pos],
                                          [s for s, _ in neg])
                row.update({k: _r(auc[k]) for k in ("auroc", "low", "high")}, n_positive=auc["n_positive"],
                           n_negative=auc["n_negative"],
                           **{k: _r(held[k]) if isinstance(held[k], float) else held[k]
                              for k in ("false_positive_rate", "fpr_low", "fpr_high", "false_positives", "negatives",
                                        "true_positive_rate", "tpr_low", "tpr_high", "true_positives", "positives")})
            out["detection"].append(row)
    edge_auc = {r["variant"]: r.get("auroc") for r in out["detection"] if r["method"] == EDGE}
    for row in out["detection"]:
        row["beats_edge"] = None if roles.get(row["method"]) != "explanation" or row.get("low") is None \
            else bool(row["low"] > (edge_auc.get(row["variant"]) or 0.5))

    out["image_level"] = []
    corr: dict[tuple[str, str], dict[int, float]] = {}
    for v in variants:
        for m in methods:
            corr[v, m] = {e.seed: _spearman(e.shares.shares["as_generated"][m], e.shares.evidence["as_generated"])
                          for e in entries if e.variant == v and e.setting == SETTINGS[1]}
    for v in variants:
        for m in methods:
            values = corr[v, m]
            gap = [values[s] - corr[v, EDGE][s] for s in values if math.isfinite(values[s])
                   and math.isfinite(corr[v, EDGE].get(s, math.nan))]
            t_gap = _t(gap, 1.0)
            out["image_level"].append({"variant": v, "method": m, "role": roles.get(m), "setting": SETTINGS[1],
                                       **_t(list(values.values()), 1.0),
                                       "beats_edge": None if roles.get(m) != "explanation" or not gap
                                       else bool(t_gap.get("low") is not None and t_gap["low"] > 0)})

    out["salience"] = []
    for v in variants:
        mine = [e for e in entries if e.variant == v and all(s in e.shares.shares for s in salience)]
        for m in methods:
            cells = [(e.setting, s, e.score(m, s)) for e in mine for s in salience]
            cells = [c for c in cells if math.isfinite(c[2])]
            row = {"variant": v, "method": m, "role": roles.get(m), "models": len(mine),
                   "seeds": sorted({e.seed for e in mine}), "mean": {f"{a}/{s}": _r(_POINTS * float(np.mean([c[2] for c in cells if c[0] == a and c[1] == s])))
                            for a in SETTINGS for s in salience if any(c[0] == a and c[1] == s for c in cells)}}
            if len(cells) >= 3:
                r2 = factor_r2([c[2] for c in cells], [c[0] for c in cells], [c[1] for c in cells])
                row.update({k: _r(x) for k, x in r2.items()})
                row["follows_salience_more"] = None if row["r2_regime"] is None or row["r2_salience"] is None \
                    else bool(row["r2_salience"] > row["r2_regime"])
            out["salience"].append(row)
    return out
