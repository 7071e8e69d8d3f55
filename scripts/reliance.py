r"""What the cued-digits models rely on, measured (maintainer script).

    python scripts/reliance.py                     # every seed model of both cued settings
    python scripts/reliance.py --seeds 0,1 --out /tmp/reliance.json

For each trained model ``models/seeds/cued-digits/<setting>/<variant>-seed<k>`` (settings ``p10``:
trained on ``cued-digits-p10``, the cue independent of the label; ``p100``: on ``cued-digits-p100``,
the cue a shortcut), on their shared test split ``cued-digits`` (2,000 images; the cue on every
image, agreeing with the label on about half), :func:`infsa_viz.evaluation.reliance.cue_reliance` measures how the model
decides on conflicting images (by the cue, by the digit, by neither) and
:func:`~infsa_viz.evaluation.interventions.object_importance` the drop of the explained class when
each object alone is changed in distribution (the target swapped for another class's digit, a
distractor or the cue removed, the background swapped). With the *predicted* class explained (the
protocol of the cued verdict), :func:`~infsa_viz.evaluation.reliance.top_object_summary` gives the
share of images whose top object is not the target; with the label explained, the same for
comparison. Writes ``metrics/reliance-cued-digits.json``: per model, per setting (mean, min, max
over seeds) and the difference of cue reliance between the settings.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: the repository's package and scripts
    sys.path.insert(0, str(ROOT))

SEEDS_DIR = Path("models") / "seeds"
#: The training settings: subfolders of models/seeds/cued-digits, and the shared test split.
SETTINGS = ("p10", "p100")
DATA = "cued-digits"
OUT = Path("metrics") / "reliance-cued-digits.json"
from infsa_viz.cli import check_outputs, script_main, script_parser  # noqa: E402


def measure(model_dir: Path, benchmark: str, *, batch_size: int) -> dict[str, Any]:
    """One model's reliance figures (JSON-ready)."""
    from infsa_viz import load_model
    from infsa_viz.data import test_split
    from infsa_viz.evaluation.interventions import object_importance
    from infsa_viz.evaluation.reliance import cue_reliance, top_object_summary

    model = load_model(model_dir)
    data = test_split(benchmark=benchmark)
    behaviour = cue_reliance(model, data, batch_size=batch_size)
    out: dict[str, Any] = {"model": str(model_dir), "variant": model.config.attention, **behaviour.summary()}
    for explained, classes in (("predicted", behaviour.predicted), ("label", behaviour.labels)):
        importance = object_importance(model, data, explained=classes, batch_size=batch_size)
        out[f"top_object_{explained}"] = top_object_summary(importance, behaviour.conditions)
    return out


def _spread(values: list[float]) -> dict[str, float] | None:
    found = [v for v in values if v is not None]
    if not found:
        return None
    return {"mean": round(sum(found) / len(found), 4), "min": round(min(found), 4), "max": round(max(found), 4)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per setting and variant: mean / min / max over seeds of the headline figures."""
    out: dict[str, Any] = {}
    for row in rows:
        entry = out.setdefault(row["setting"], {}).setdefault(row["variant"], {"models": 0, "_rows": []})
        entry["models"] += 1
        entry["_rows"].append(row)
    for variants in out.values():
        for entry in variants.values():
            found = entry.pop("_rows")
            for key in ("accuracy", "consistent_accuracy", "conflicting_accuracy", "decided_by_cue",
                        "decided_by_digit"):
                entry[key] = _spread([r.get(key) for r in found])
            for explained in ("predicted", "label"):
                entry[f"top_not_target_{explained}"] = _spread([r[f"top_object_{explained}"]["not_target"]
                                                                for r in found])
    return out


@script_main("reliance.py")
def main(argv: list[str] | None = None) -> int:
    parser = script_parser("reliance.py", __doc__)
    from infsa_viz.commands.lists import bounded, comma_ints, output_file, threads

    parser.add_argument("--seeds", type=comma_ints, default=None, help="seeds to measure (default: every trained one)")
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR, help=f"default {SEEDS_DIR}")
    parser.add_argument("--out", type=output_file, default=str(OUT), help=f"report (default {OUT})")
    parser.add_argument("--threads", type=threads(), default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--batch-size", type=bounded(int, 1, 1 << 16, name="--batch-size"), default=256,
                        help="images per forward pass (default 256)")
    args = parser.parse_args(argv)
    if args.seeds is not None and not args.seeds:
        parser.error("--seeds is empty; expected comma-separated seeds")
    import torch

    from infsa_viz.io import write_json
    from infsa_viz import VARIANTS
    from infsa_viz.progress import progress

    torch.set_num_threads(args.threads)
    found = []
    for setting in SETTINGS:
        for variant in VARIANTS:
            for folder in sorted((args.seeds_dir / DATA / setting).glob(f"{variant}-seed*")):
                seed = folder.name.rsplit("seed", 1)[1]
                if (folder / "card.json").is_file() and seed.isdigit() and (
                        args.seeds is None or int(seed) in args.seeds):
                    found.append((setting, variant, int(seed), folder))
    if not found:
        parser.error(f"no trained model under {args.seeds_dir / DATA}/{{{','.join(SETTINGS)}}} for --seeds {args.seeds}")
    check_outputs({"--out": args.out}, [folder for *_, folder in found])  # before any model is measured
    rows = []
    for setting, variant, seed, folder in progress(found, desc="models", unit="model"):
        rows.append({"setting": setting, "seed": seed, **measure(folder, DATA, batch_size=args.batch_size)})
    summary = summarise(rows)
    difference = {}
    for variant in VARIANTS:
        low, high = (summary.get(s, {}).get(variant, {}).get("decided_by_cue") for s in SETTINGS)
        if low and high:
            difference[variant] = round(high["mean"] - low["mean"], 4)
    write_json(Path(args.out), {
        "command": "python scripts/reliance.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "protocol": {
            "test_split": "the cued benchmarks' shared test split (2,000 images, cue on every image, "
                          "agreement 0.5)",
            "decided_by_cue": "share of conflicting images whose predicted class is the cue's class",
            "top_object": "object whose in-distribution change lowers the explained class's softmax probability "
                          "most, among the objects the image holds; explained class: predicted (the cued "
                          "verdict's protocol) or label",
            "interventions": "target swapped for another class's digit at the same size and centre; distractors "
                             "and cue removed; background swapped for the alternative crop",
        },
        "summary": summary,
        "cue_reliance_difference_p100_minus_p10": difference,
        # The benchmark's ground truth as a whole: mean over every model (both settings) of the share of
        # test images whose top object is not the target.
        "top_not_target_all_models": {explained: round(sum(r[f"top_object_{explained}"]["not_target"] for r in rows)
                                                       / len(rows), 4) for explained in ("predicted", "label")},
        "models": rows,
    })
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
