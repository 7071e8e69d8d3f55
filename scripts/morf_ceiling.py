r"""MoRF's best achievable area, bounded from below by searches: maps against the greedy oracle and two
beam searches (maintainer script).

    python scripts/morf_ceiling.py --threads 2            # every benchmark's stated subset; resumable
    python scripts/morf_ceiling.py --summary-only         # rebuild metrics/morf-ceiling.json from the parts
    python scripts/morf_ceiling.py --benchmarks cued-digits --seeds 1 --threads 2   # one benchmark

For each benchmark and each seed model ``models/seeds/<benchmark>/<variant>-seed<k>`` (seeds
``--seeds``, default 1: one model per variant), on the first :data:`N_IMAGES` test images: the
MoRF-AOC of the verdict's maps (``scripts.verdict.METHODS``) and the random map, of the greedy
deletion oracle (:mod:`infsa_viz.metrics.greedy_deletion`) and of two beam searches
(:mod:`infsa_viz.metrics.beam_deletion`, width 4 / expand 8 and width 8 / expand 4), all under the
evaluation's MoRF protocol (its default steps, baseline, seed and tracked class). Each search's area
is the area of an order it found: a **lower bound of the best achievable area**, never an upper
bound. Reported per model and per benchmark: the share of image × map pairs whose MoRF-AOC is above
each search and above the best of the searches, the largest excess, the searches' gains over the
greedy oracle and over each other, and each search's cost in forwards and seconds per image. Each model's result is kept in ``runs/morf-ceiling/<benchmark>/<model>.json``
(a killed run continues); ``metrics/morf-ceiling.json`` gathers them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(ROOT))
#: Images per benchmark (the stated subset: the first N test images); a benchmark not named here gets
#: :data:`DEFAULT_IMAGES`. The 96 px benchmark's 12 × 12 grid costs about 15,000 forwards per image.
N_IMAGES = {"cluttered-digits": 20, "cluttered-digits-hard": 5}
DEFAULT_IMAGES = 20
#: The beam search's settings.
SEARCH = {"width": 4, "expand": 8}
#: A second, differently shaped beam search (wider, fewer groups per order): each search's area is a
#: lower bound of the best achievable area, and exceedances are counted against the best of them.
ALT_SEARCH = {"width": 8, "expand": 4}
#: Strictly above a ceiling: by more than this many points (float noise of the same curve).
TOLERANCE = 1e-9
from infsa_viz.cli import script_main  # noqa: E402


def ceiling_of_model(model: Any, data: Any, maps: list[str], *, target: str = "label") -> dict[str, Any]:
    """Per image: MoRF-AOC of each map, of the greedy oracle and of the beam estimate, with costs.

    ``target``: the class explained and tracked, ``"label"`` or ``"predicted"`` (the model's class on
    the clean image)."""
    import numpy as np
    import torch

    from infsa_viz.evaluation import EvalSettings
    from infsa_viz.maps import attribute_images, check_method
    from infsa_viz.metrics import beam_deletion, greedy_deletion, morf_aoc, perturbation_curves
    from infsa_viz.preprocess import prepare

    s = EvalSettings().resolved()
    morf = {k: s[k] for k in ("steps", "baseline", "seed", "batch_size")}
    x = prepare(model, data.images).tensor
    if target not in ("label", "predicted"):
        raise ValueError(f"target={target!r} is not supported; expected 'label' or 'predicted'")
    y = torch.as_tensor(np.asarray(data.labels, dtype=np.int64))
    if target == "predicted":
        with torch.no_grad():
            y = model(x).argmax(-1)

    def aoc(curves: Any) -> list[float]:
        return [round(float(v), 4) for v in morf_aoc(curves, select="all").per_image]

    values: dict[str, list[float]] = {}
    for method in maps:
        spec = check_method(method)
        options = {"seed": morf["seed"]} if spec.seeded else {}
        found = attribute_images(model, x, method, target=y if spec.explains_class else None, **options).maps
        values[method] = aoc(perturbation_curves(model, x, found, y, patch_size=model.patch_size,
                                                 **morf))
    start = time.perf_counter()
    greedy = greedy_deletion(model, x, y, patch_size=model.patch_size, **morf)
    greedy_seconds = time.perf_counter() - start
    start = time.perf_counter()
    beam = beam_deletion(model, x, y, patch_size=model.patch_size, **morf, **SEARCH)
    beam_seconds = time.perf_counter() - start
    start = time.perf_counter()
    alt = beam_deletion(model, x, y, patch_size=model.patch_size, **morf, **ALT_SEARCH)
    alt_seconds = time.perf_counter() - start
    with torch.no_grad():
        correct = (model(x).argmax(-1) == torch.as_tensor(np.asarray(data.labels, dtype=np.int64))).numpy()
    return {"n_images": len(y), "correct": correct.astype(int).tolist(), "maps": values,
            "greedy_deletion": aoc(greedy.curves), "beam_deletion": aoc(beam.curves),
            "beam_deletion_alt": aoc(alt.curves),
            "cost": {"greedy_forwards_per_image": int(greedy.forwards_per_image),
                     "beam_forwards_per_image_mean": round(float(beam.forwards_per_image.mean()), 1),
                     "beam_forwards_per_image_max": int(beam.forwards_per_image.max()),
                     "beam_forwards_bound": beam.protocol["forwards_per_image_max"],
                     "greedy_seconds_per_image": round(greedy_seconds / len(y), 3),
                     "beam_seconds_per_image": round(beam_seconds / len(y), 3),
                     "beam_alt_forwards_per_image_mean": round(float(alt.forwards_per_image.mean()), 1),
                     "beam_alt_seconds_per_image": round(alt_seconds / len(y), 3),
                     "threads": torch.get_num_threads()},
            "protocol": {"morf": {**morf, "explained": "target"}, "search": beam.protocol["search"],
                         "alt_search": alt.protocol["search"], "target": target}}


def exceedances(found: dict[str, Any]) -> dict[str, Any]:
    """Pairs above each ceiling, the largest excess and the estimate's gain over greedy, for one model
    (or a benchmark's models merged: lists concatenated)."""
    import numpy as np

    greedy, beam = np.asarray(found["greedy_deletion"]), np.asarray(found["beam_deletion"])
    maps = np.stack([np.asarray(v) for v in found["maps"].values()], axis=1)  # (n, maps)
    out: dict[str, Any] = {"pairs": int(maps.size)}
    for name, ceiling in (("greedy_deletion", greedy), ("beam_deletion", beam)):
        excess = maps - ceiling[:, None]
        above = excess > TOLERANCE
        out[f"above_{name}"] = int(above.sum())
        out[f"share_above_{name}"] = round(float(above.mean()), 4)
        out[f"max_excess_{name}"] = round(float(excess.max()), 4)
        out[f"images_with_a_map_above_{name}"] = int(above.any(axis=1).sum())
    if "beam_deletion_alt" in found:  # a report made before the second search has none
        alt = np.asarray(found["beam_deletion_alt"])
        best = np.maximum(np.maximum(greedy, beam), alt)  # the best of the searches: still a lower bound
        excess = maps - best[:, None]
        above = excess > TOLERANCE
        out.update({"above_best_of_searches": int(above.sum()), "share_above_best_of_searches":
                    round(float(above.mean()), 4), "max_excess_best_of_searches": round(float(excess.max()), 4),
                    "images_with_a_map_above_best_of_searches": int(above.any(axis=1).sum()),
                    "searches": ["greedy_deletion", "beam_deletion", "beam_deletion_alt"],
                    "alt_above_beam_images": int((alt > beam + TOLERANCE).sum()),
                    "beam_above_alt_images": int((beam > alt + TOLERANCE).sum()),
                    "best_minus_beam_mean": round(float((best - beam).mean()), 4)})
    out["beam_minus_greedy_mean"] = round(float((beam - greedy).mean()), 4)
    out["beam_above_greedy_images"] = int((beam > greedy + TOLERANCE).sum())
    out["per_map_above_beam"] = {m: int((np.asarray(v) > beam + TOLERANCE).sum()) for m, v in found["maps"].items()}
    return out


def summarise(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per benchmark: the models' image × map pairs pooled, and per model."""
    out = {}
    for benchmark, models in parts.items():
        pooled: dict[str, Any] = {"maps": {}, "greedy_deletion": [], "beam_deletion": []}
        if all("beam_deletion_alt" in found for found in models.values()):
            pooled["beam_deletion_alt"] = []
        for found in models.values():
            for search in ("greedy_deletion", "beam_deletion", "beam_deletion_alt"):
                if search in pooled:
                    pooled[search] += found[search]
            for m, v in found["maps"].items():
                pooled["maps"].setdefault(m, []).extend(v)
        costs = [f["cost"] for f in models.values()]
        out[benchmark] = {
            "models": len(models), "images_per_model": sorted({f["n_images"] for f in models.values()}),
            **exceedances(pooled),
            "beam_forwards_per_image_mean": round(sum(c["beam_forwards_per_image_mean"] for c in costs) / len(costs),
                                                  1),
            "greedy_forwards_per_image": sorted({c["greedy_forwards_per_image"] for c in costs}),
            "beam_seconds_per_image_mean": round(sum(c["beam_seconds_per_image"] for c in costs) / len(costs), 2),
            "per_model": {name: exceedances(found) for name, found in models.items()},
        }
    return out


def valid_part(part: Any) -> bool:
    """Whether a stored part holds what :func:`summarise` reads (a damaged one is computed again)."""
    def numbers(values: Any) -> bool:
        return isinstance(values, list) and all(isinstance(v, (int, float)) for v in values)

    cost_keys = ("beam_forwards_per_image_mean", "greedy_forwards_per_image", "beam_seconds_per_image")
    return (isinstance(part, dict) and isinstance(part.get("n_images"), int) and isinstance(part.get("maps"), dict)
            and bool(part["maps"]) and all(numbers(v) and len(v) == part["n_images"] for v in part["maps"].values())
            and all(numbers(part.get(k)) and len(part[k]) == part["n_images"]
                    for k in ("greedy_deletion", "beam_deletion"))
            and isinstance(part.get("cost"), dict) and all(k in part["cost"] for k in cost_keys))


@script_main("morf_ceiling.py")
def main(argv: list[str] | None = None) -> int:
    from scripts.seed_runs import commands, explained, parse_seed_run, run_parts, seed_run_parser, write_report

    parser = seed_run_parser("morf_ceiling.py", __doc__, seeds=(1,), parts=Path("runs") / "morf-ceiling",
                             out=Path("metrics") / "morf-ceiling.json")
    args, benchmarks = parse_seed_run(parser, argv)
    from infsa_viz.data import test_split
    from infsa_viz.formats import load_model
    from scripts.verdict import METHODS

    maps = [*METHODS, "random"]
    data: dict[str, Any] = {}

    def compute(benchmark: str, model_dir: Path) -> dict[str, Any]:
        n_images = N_IMAGES.get(benchmark, DEFAULT_IMAGES)
        data[benchmark] = data.get(benchmark) or test_split(n_images, benchmark=benchmark)
        return ceiling_of_model(load_model(model_dir).eval(), data[benchmark], maps,
                                target=explained(benchmark)["target"])

    def options(benchmark: str) -> dict[str, Any]:
        return {"n_images": N_IMAGES.get(benchmark, DEFAULT_IMAGES), "maps": maps, "search": SEARCH,
                "target": explained(benchmark)["target"]}

    parts = run_parts(benchmarks, args, compute, options=options, valid=valid_part, what="MoRF-ceiling result")
    protocol = {
        **commands("python scripts/morf_ceiling.py", argv),
        "n_images": {b: N_IMAGES.get(b, DEFAULT_IMAGES) for b in benchmarks}, "seeds": list(args.seeds),
        "maps": maps, "search": SEARCH, "explained": {b: explained(b)["target"] for b in benchmarks},
        "rule": f"a pair (image, map) is above a ceiling when its MoRF-AOC exceeds the ceiling's on that image by more "
                f"than {TOLERANCE:g} points; every image of the subset counts (MoRF-AOC with select='all', the "
                "evaluation's default MoRF protocol)",
        "alt_search": ALT_SEARCH,
        "estimate": "each search's area (greedy, beam, second beam) is the area of an order it found: a lower bound "
                    "of the best achievable area, not a ceiling; a map above a search is counted against the best of "
                    "the searches (above_best_of_searches)",
    }
    return write_report(args.out, protocol, summarise(parts), parts)

if __name__ == "__main__":
    sys.exit(main())
