r"""Which metrics can be trusted where? The meta-evaluation of every metric, with controls, on every benchmark
(maintainer script).

    python scripts/meta_evaluation.py --threads 2        # every seed model of every benchmark; resumable
    python scripts/meta_evaluation.py --summary-only     # rebuild metrics/meta-evaluation.json from the parts

For each benchmark and each seed model ``models/seeds/<benchmark>/<variant>-seed<k>`` (seeds
``--seeds``), :func:`infsa_viz.stats.meta.meta_evaluate_model` scores every registered figure and
the controls (:mod:`infsa_viz.stats.meta.controls`: five negative controls that ignore the model,
and the oracle correlation, faithful by construction) on the model's evidence oracle degraded step by
step (monotone: Spearman of the mean against the blend weight ≤ −0.9), on a pair of maps under noise
on a grid calibrated on the pair's difference (stable: ≥ 0.9 of image-level strict orders kept at a
tenth of it; the level at which each figure breaks is reported), and on the model's and a
parameter-randomised copy's oracles swapped (reactive: the model's own oracle wins ≥ 0.75 of the
comparisons under both models). Trusted = all three, under each of two independent reference oracles
(:data:`ORACLES`: the evidence re-rendered by the generator, and the evidence measured by grey fill of
the object masks); a figure is trusted only where it is trusted under both, and a figure computed
from the same evidence an oracle paints is flagged "by construction" under it. Each model's result is kept in
``runs/meta/<benchmark>/<model>.json`` (a killed run continues); ``metrics/meta-evaluation.json``
gathers them with, per benchmark and figure, how many models trust it, and whether every negative
control failed and the positive control passed on every model.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(ROOT))
from infsa_viz.cli import script_main  # noqa: E402
#: Images per benchmark, and the ROAD subset (its imputation is the costliest metric); a benchmark not
#: named here gets the defaults. Sized so that one model per variant (``--seeds 1``) of both benchmarks
#: runs in about half an hour on the shared 2-core machine (the 96 px benchmark costs ~6x per image).
N_IMAGES = {"cluttered-digits": 60, "cluttered-digits-hard": 20}
ROAD_IMAGES = {"cluttered-digits": 12, "cluttered-digits-hard": 4}
DEFAULT_IMAGES, DEFAULT_ROAD_IMAGES = 60, 12
#: The reference oracles, each independent of the other: the evidence re-rendered by the generator
#: (the first: its summary is the report's ``summary``) and the evidence measured by grey fill of the
#: object masks. A figure is trusted only where it is trusted under every one.
ORACLES = ("evidence_oracle", "evidence_oracle_greyfill")


def _finite(values: list[Any]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def summarise(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per benchmark and figure: models that find it monotone / stable / reactive / trusted, the worst
    model's figures, where stability breaks on the noise grid; and whether the controls behaved."""
    out: dict[str, Any] = {}
    for benchmark, models in parts.items():
        figures: dict[str, Any] = {}
        for found in models.values():
            for name, meta in found["figures"].items():
                entry = figures.setdefault(name, {"role": meta.get("role", "metric"), "models": 0, "monotone": 0,
                                                  "stable": 0, "reactive": 0, "trustworthy": 0, "values": []})
                entry["models"] += 1
                for key in ("monotone", "stable", "reactive", "trustworthy"):
                    entry[key] += bool(meta.get(key))
                entry["values"].append(meta)
        for entry in figures.values():
            metas = entry.pop("values")
            rho = _finite([m["degradation_spearman"] for m in metas])
            stab = _finite([m["stability"] for m in metas])
            react = _finite([m.get("reactivity") for m in metas])
            broken = [m.get("noise_breakdown") for m in metas]
            entry["spearman_max"] = round(max(rho), 3) if rho else None  # the least monotone model
            entry["stability_min"] = round(min(stab), 3) if stab else None
            entry["reactivity_min"] = round(min(react), 3) if react else None
            # the smallest noise (relative to the pair's difference, and in map units) at which any model's
            # stability fell below 0.9; None: no model's did on the grid
            found_breaks = [(m["noise_breakdown"], m["noise_breakdown_epsilon"]) for m in metas
                            if m.get("noise_breakdown") is not None]
            entry["noise_breakdown_min"] = min(found_breaks)[0] if found_breaks else None
            entry["noise_breakdown_epsilon_min"] = min(e for _, e in found_breaks) if found_breaks else None
            entry["noise_breakdown_models"] = sum(b is not None for b in broken)
            if metas and "stability_curve" in metas[0]:
                curves = [[v if v is not None and math.isfinite(v) else math.nan for v in m["stability_curve"]]
                          for m in metas]
                entry["noise"] = metas[0]["noise"]
                entry["stability_curve_min"] = [round(min(c), 3) if math.isfinite(min(c)) else None
                                                for c in zip(*curves, strict=True)]
        negatives = [f for f, e in figures.items() if e["role"] == "negative control"]
        positives = [f for f, e in figures.items() if e["role"] == "positive control"]
        for role, found in (("metric", [f for f, e in figures.items() if e["role"] == "metric"]),
                            ("negative control", negatives), ("positive control", positives)):
            if not found:  # all() over nothing is True: "the controls passed" would be said of no control
                raise ValueError(f"{benchmark}: the parts of {len(models)} model(s) hold no {role} figure; nothing "
                                 "to summarise (damaged or foreign parts?)")
        out[benchmark] = {
            "controls": {"negative": negatives, "positive": positives,
                         "negatives_never_trusted": all(figures[f]["trustworthy"] == 0 for f in negatives),
                         "positive_trusted_for_every_model": all(figures[f]["trustworthy"] == figures[f]["models"]
                                                                 for f in positives)},
            "trusted_for_every_model": [f for f, e in figures.items()
                                        if e["role"] == "metric" and e["trustworthy"] == e["models"] > 0],
            "figures": figures,
        }
    return out


def across_oracles(models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One benchmark's figures under each reference oracle: the summary and ranking under each, the
    figures flagged "by construction" under each, and the figures trusted for every model under every one."""
    from infsa_viz.metrics.registry import FIGURES

    per = {oracle: summarise({"_": {m: found[oracle] for m, found in models.items()}})["_"] for oracle in ORACLES}
    by_construction = {oracle: sorted(f for f in per[oracle]["figures"] if f in FIGURES and FIGURES[f].ceiling == oracle)
                       for oracle in ORACLES}
    ranking = {oracle: [f for f, _ in sorted(((f, e) for f, e in per[oracle]["figures"].items() if e["role"] == "metric"),
                                             key=lambda item: (-item[1]["trustworthy"],
                                                               -(item[1]["reactivity_min"] or -1.0), item[0]))]
               for oracle in ORACLES}
    trusted = set.intersection(*(set(per[o]["trusted_for_every_model"]) for o in ORACLES))
    return {"by_oracle": {o: {"trusted_for_every_model": per[o]["trusted_for_every_model"], "ranking": ranking[o],
                              "by_construction": by_construction[o], "controls": per[o]["controls"],
                              "figures": {f: {k: e[k] for k in ("models", "monotone", "stable", "reactive",
                                                                "trustworthy", "reactivity_min")}
                                          for f, e in per[o]["figures"].items()}} for o in ORACLES},
            "trusted_under_every_oracle": sorted(trusted)}


@script_main("meta_evaluation.py")
def main(argv: list[str] | None = None) -> int:
    from scripts.seed_runs import commands, explained, parse_seed_run, run_parts, seed_run_parser, write_report

    parser = seed_run_parser("meta_evaluation.py", __doc__, seeds=(1, 2, 3), parts=Path("runs") / "meta",
                             out=Path("metrics") / "meta-evaluation.json")
    args, benchmarks = parse_seed_run(parser, argv)
    from infsa_viz.data import test_split
    from infsa_viz.evaluation import EvalSettings
    from infsa_viz.stats.meta import meta_evaluate_model
    from infsa_viz.formats import load_model

    data: dict[str, Any] = {}

    def compute(benchmark: str, model_dir: Path) -> dict[str, Any]:
        n_images = N_IMAGES.get(benchmark, DEFAULT_IMAGES)
        settings = EvalSettings(subsample=n_images, road_images=ROAD_IMAGES.get(benchmark, DEFAULT_ROAD_IMAGES),
                                sanity_images=0, **explained(benchmark))
        data[benchmark] = data.get(benchmark) or test_split(n_images, benchmark=benchmark)
        model = load_model(model_dir)
        found = {oracle: meta_evaluate_model(model, data[benchmark], protocol=settings, oracle=oracle).to_dict()
                 for oracle in ORACLES}
        return {**found[ORACLES[0]], "oracles": found}

    # a part made before the controls and the reactivity test is computed again
    keys = ("monotone", "stable", "trustworthy")

    def valid(part: Any) -> bool:
        figures = part.get("figures") if isinstance(part, dict) else None
        return isinstance(figures, dict) and all(isinstance(f, dict) and all(k in f for k in keys)
                                                 for f in figures.values())

    def options(benchmark: str) -> dict[str, Any]:
        return {"n_images": N_IMAGES.get(benchmark, DEFAULT_IMAGES),
                "road_images": ROAD_IMAGES.get(benchmark, DEFAULT_ROAD_IMAGES), "explained": explained(benchmark),
                "oracles": list(ORACLES)}

    parts = run_parts(benchmarks, args, compute, options=options,
                      valid=lambda part: valid(part) and set(part.get("oracles", {})) == set(ORACLES),
                      what="meta-evaluation result")
    protocol = {
        **commands("python scripts/meta_evaluation.py", argv),
        "parts": "one JSON per model in --parts (resumable), each computed by the command",
        "n_images": {b: N_IMAGES.get(b, DEFAULT_IMAGES) for b in benchmarks},
        "road_images": {b: ROAD_IMAGES.get(b, DEFAULT_ROAD_IMAGES) for b in benchmarks},
        "seeds": list(args.seeds),
        "explained": {b: explained(b) for b in benchmarks},
        "rule": "a figure is trusted for a model when it is monotone (Spearman of its mean quality against the blend "
                "weight alpha <= -0.9), stable (of the images whose pair of maps it orders strictly, >= 0.9 keep the "
                "order under noise a tenth of the maps' difference) and reactive (the model's own evidence oracle "
                "beats a parameter-randomised copy's in >= 0.75 of the comparisons under both models); see "
                "infsa_viz.stats.meta",
    }
    protocol["oracles"] = {"names": list(ORACLES), "rule": "a figure is trusted for a model only when it is trusted "
                           "under every oracle; a figure whose ground truth is the evidence an oracle paints (its "
                           "declared ceiling) is flagged 'by construction' under that oracle"}
    summary = summarise(parts)
    for benchmark, entry in summary.items():
        entry.update(across_oracles({m: p["oracles"] for m, p in parts[benchmark].items()}))
    return write_report(args.out, protocol, summary, parts)

if __name__ == "__main__":
    sys.exit(main())
