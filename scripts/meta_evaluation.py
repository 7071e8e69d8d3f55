r"""Which metrics can be trusted where? The meta-evaluation of every metric on both benchmarks (maintainer script).

    python scripts/meta_evaluation.py --threads 2        # every seed model of every benchmark; resumable
    python scripts/meta_evaluation.py --summary-only     # rebuild metrics/meta-evaluation.json from the parts

For each benchmark and each seed model ``models/seeds/<benchmark>/<variant>-seed<k>`` (seeds
``--seeds``), :func:`infsa_viz.evaluation.meta.meta_evaluate_model` degrades the model's evidence
oracle step by step (blended with a random map at α = 0 … 1, shifted 1–3 patches) and perturbs two
maps harmlessly, and reports for every registered figure its monotonicity (Spearman of the mean
against α, trustworthy at ≤ −0.9) and its stability (share of images whose order of the two maps
survives the perturbation, trustworthy at ≥ 0.9). Each model's result is kept in
``runs/meta/<benchmark>/<model>.json`` (a killed run continues); ``metrics/meta-evaluation.json``
gathers them with, per benchmark and figure, how many models find the figure trustworthy.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEEDS_DIR = Path("models") / "seeds"
#: Images per benchmark, and the ROAD subset (its imputation is the costliest metric).
N_IMAGES = {"cluttered-digits": 100, "cluttered-digits-hard": 50}
ROAD_IMAGES = {"cluttered-digits": 20, "cluttered-digits-hard": 10}


def models_of(benchmark: str, seeds: list[int], seeds_dir: Path) -> list[Path]:
    from infsa_viz.model import VARIANTS

    found = [seeds_dir / benchmark / f"{v}-seed{s}" for s in seeds for v in VARIANTS]
    return [m for m in found if (m / "config.json").is_file()]


def summarise(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per benchmark and figure: models that find it monotone / stable / trustworthy, and the range."""
    out: dict[str, Any] = {}
    for benchmark, models in parts.items():
        figures: dict[str, Any] = {}
        for model, found in models.items():
            for name, meta in found["figures"].items():
                entry = figures.setdefault(name, {"models": 0, "monotone": 0, "stable": 0, "trustworthy": 0,
                                                  "spearman": [], "stability": []})
                entry["models"] += 1
                for key in ("monotone", "stable", "trustworthy"):
                    entry[key] += bool(meta[key])
                entry["spearman"].append(meta["degradation_spearman"])
                entry["stability"].append(meta["stability"])
        for entry in figures.values():
            rho = [v for v in entry.pop("spearman") if v is not None and math.isfinite(v)]
            stab = [v for v in entry.pop("stability") if v is not None and math.isfinite(v)]
            entry["spearman_max"] = round(max(rho), 3) if rho else None  # the least monotone model
            entry["stability_min"] = round(min(stab), 3) if stab else None
        out[benchmark] = figures
    return out


def main(argv: list[str] | None = None) -> int:
    from infsa_viz.commands.lists import comma_ints
    from infsa_viz.data import BENCHMARKS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated benchmarks")
    parser.add_argument("--seeds", type=comma_ints, default=(1, 2, 3), help="training seeds (default 1,2,3)")
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR)
    parser.add_argument("--parts", type=Path, default=Path("runs") / "meta", help="per-model results (resumable)")
    parser.add_argument("--out", type=Path, default=Path("metrics") / "meta-evaluation.json")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--summary-only", action="store_true", help="compute nothing; gather the parts")
    args = parser.parse_args(argv)
    if not args.seeds or min(args.seeds) < 0:
        parser.error(f"--seeds={args.seeds} must name at least one non-negative integer")
    benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = sorted(set(benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"--benchmarks: {unknown} are not benchmarks; expected some of {list(BENCHMARKS)}")
    if args.threads is not None:
        if not 1 <= args.threads <= 256:
            parser.error(f"--threads={args.threads} must lie in [1, 256]")
        import torch

        torch.set_num_threads(args.threads)
    from infsa_viz.data import test_split
    from infsa_viz.evaluation import EvalSettings
    from infsa_viz.evaluation.meta import meta_evaluate_model
    from infsa_viz.formats import load_model
    from infsa_viz.io import read_json, write_json
    from infsa_viz.progress import progress

    parts: dict[str, dict[str, Any]] = {}
    for benchmark in benchmarks:
        models = models_of(benchmark, args.seeds, args.seeds_dir)
        settings = EvalSettings(subsample=N_IMAGES[benchmark], road_images=ROAD_IMAGES[benchmark], sanity_images=0)
        data = None
        for model_dir in progress(models, desc=benchmark, unit="model"):
            part = args.parts / benchmark / f"{model_dir.name}.json"
            if not part.is_file():
                if args.summary_only:
                    continue
                data = data or test_split(N_IMAGES[benchmark], benchmark=benchmark)
                found = meta_evaluate_model(load_model(model_dir), data, protocol=settings)
                write_json(part, {"model": str(model_dir), **found.to_dict()})
            parts.setdefault(benchmark, {})[model_dir.name] = read_json(part)
    given = list(argv if argv is not None else sys.argv[1:])
    script = "python scripts/meta_evaluation.py"
    # the parts are computed by the command without --summary-only (which only gathers them)
    computing = shlex.join([a for a in given if a != "--summary-only"])
    write_json(args.out, {
        "protocol": {"command": f"{script} {computing}".rstrip(), "gathered_by": f"{script} {shlex.join(given)}".rstrip(),
                     "parts": "one JSON per model in --parts (resumable), each computed by the command",
                     "n_images": N_IMAGES, "road_images": ROAD_IMAGES, "seeds": list(args.seeds),
                     "rule": "a figure is trustworthy for a model when it is monotone (Spearman of its mean quality "
                             "against the blend weight alpha <= -0.9) and stable (>= 0.9 of image-level orders of two "
                             "maps kept under harmless noise); see infsa_viz.evaluation.meta"},
        "summary": summarise(parts),
        "models": parts,
    })
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
