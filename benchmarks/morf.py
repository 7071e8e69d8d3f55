"""Our batched MoRF engine against ``quantus.RegionPerturbation`` on an aligned protocol.

Run as ``python -m benchmarks morf``. Same model, images, maps, patch size, number of steps and
constant baseline: Quantus removes one non-overlapping patch per step in descending attribution
order (``regions_evaluation`` = number of patches) and returns ``p_0 − p_k``; we run
:func:`~infsa_viz.metrics.perturbation_curves` with ``steps = h·w`` (one patch per step) and
compare ``p_0 − p_k``. Quantus is a test-only dependency, imported here lazily.
"""

from __future__ import annotations

import platform
import time
import warnings
from typing import Any

import numpy as np
import torch

from infsa_viz.maps.attention import AttentionMap

__all__ = ["morf_benchmark"]

OUR_BATCH = 256  # perturbed copies per forward in our engine (perturbation_curves' default; 512 ran slower here)


def morf_benchmark(model_dir: str, *, n_images: int = 64, method: str = AttentionMap.name,
                   repeats: int = 3) -> dict[str, Any]:
    """Time both engines side by side (alternating, median of ``repeats``) and compare curves.

    Args:
        model_dir: a saved model directory (:func:`~infsa_viz.formats.load_model`).
        n_images: the first ``n_images`` of the cluttered-digits test split
            (:func:`~infsa_viz.data.test_split`); default 64.
        method: the registered map method (:data:`~infsa_viz.maps.METHODS`) whose order removes
            patches, with its default options; default the raw attention map.
        repeats: timed runs of each engine; default 3.

    Returns:
        ``protocol`` (what was compared, how, on which machine), per-engine ``seconds`` and
        ``median_seconds``, ``speedup`` (Quantus / ours), the forward floor and
        ``max_abs_curve_difference`` between the two engines' ``p_0 − p_k``.

    Raises:
        ValueError: quantus missing, ``n_images`` or ``repeats`` below 1 (or ``n_images`` over the
            test split's size), or an unknown method.
    """
    try:
        import quantus
    except ImportError:
        raise ValueError("quantus is not installed: pip install --no-deps quantus==0.6.0 (see pyproject)") from None
    from infsa_viz.data import test_split
    from infsa_viz.formats import load_model
    from infsa_viz.maps import attribute_images
    from infsa_viz.metrics import perturbation_curves, upsample_map
    from infsa_viz.preprocess import preprocess

    if n_images < 1 or repeats < 1:
        raise ValueError(f"--n-images={n_images} and --repeats={repeats} must be positive")
    model = load_model(model_dir)
    test = test_split(n_images)
    images, labels = preprocess(model, test.images), test.labels  # (B, C, H, W) float32, (B,) int64
    maps = attribute_images(model, images, method).maps.numpy().astype(np.float64)  # (B, h, w)
    p = model.patch_size
    h, w = maps.shape[1:]
    attribution = upsample_map(maps, images.shape[-1], mode="nearest")[:, None]  # (B, 1, H, W)

    def ours():
        curve = perturbation_curves(model, images, maps, labels, patch_size=p, order="morf", steps=h * w,
                                    baseline="mean", batch_size=OUR_BATCH)
        return curve.probs[:, :1] - curve.probs[:, 1:]

    def theirs():
        metric = quantus.RegionPerturbation(patch_size=p, order="morf", regions_evaluation=h * w,
                                            perturb_baseline=0.0, normalise=False, abs=False,
                                            disable_warnings=True, display_progressbar=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = metric(model=model, x_batch=images.numpy(), y_batch=labels, a_batch=attribution,
                         channel_first=True, softmax=True, device="cpu", batch_size=n_images)
        return np.asarray(out, dtype=np.float64)

    n_forwards = n_images * (h * w + 1)  # both engines: the clean images, then one copy per image and step

    def forwards_only(batch: int):
        """The floor: the same number of model forwards, at ``batch`` images per call, nothing else."""
        x = images.repeat((batch + n_images - 1) // n_images, 1, 1, 1)[:batch]
        full, rest = divmod(n_forwards, batch)
        with torch.inference_mode():
            for _ in range(full):
                model(x)
            if rest:
                model(x[:rest])

    engines = {
        "infsa_viz": ours,
        "quantus": theirs,
        f"forwards_only_batch_{OUR_BATCH}": lambda: forwards_only(OUR_BATCH),
        f"forwards_only_batch_{n_images}": lambda: forwards_only(n_images),
    }
    times: dict[str, list[float]] = {name: [] for name in engines}
    results = {}
    for _ in range(repeats):
        for name, fn in engines.items():
            t0 = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) for k, v in times.items()}
    floor = min(med[f"forwards_only_batch_{OUR_BATCH}"], med[f"forwards_only_batch_{n_images}"])
    return {
        "protocol": {
            "model": model_dir, "variant": model.config.attention, "map_method": method, "n_images": n_images,
            "images": test.description, "preprocessing": model.config.preprocessing.to_dict(),
            "patch_size": p,
            "steps": h * w,
            "removal": "one patch per step, descending map value (MoRF); ties are broken by a seeded "
                       "permutation here and by argsort order in Quantus, so maps with ties (e.g. exact zeros "
                       "of Linear-InfSA's a) give different curves: compare on maps without ties",
            "ties_in_maps": int(sum(m.size - np.unique(m).size for m in maps)),
            "baseline": "constant 0.0 in model input (the normalisation's mean)",
            "score": "softmax probability of the label",
            "quantus": f"quantus {quantus.__version__} RegionPerturbation(patch_size={p}, regions_evaluation={h * w}, "
                       "perturb_baseline=0.0, normalise=False, abs=False, batch_size=n_images)",
            "ours": f"perturbation_curves(order='morf', steps=h*w, baseline='mean', batch_size={OUR_BATCH})",
            "forward_floor": f"the same {n_forwards} model forwards alone (no perturbation, no ranking), in calls of "
                             f"{OUR_BATCH} (our engine's batch) and of {n_images} images (Quantus' batch); the faster "
                             "one bounds what any engine running these forwards can reach",
            "timing": f"median of {repeats} alternating runs (wall seconds)", "threads": torch.get_num_threads(),
            "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
        },
        "seconds": {k: [round(t, 4) for t in v] for k, v in times.items()},
        "median_seconds": {k: round(v, 4) for k, v in med.items()},
        "speedup": round(med["quantus"] / med["infsa_viz"], 2),
        "model_forwards": n_forwards,
        "forward_floor_seconds": round(floor, 4),
        "time_over_floor": {k: round(med[k] / floor, 3) for k in ("infsa_viz", "quantus")},
        "speedup_bound_at_same_forwards": round(med["quantus"] / floor, 2),
        "max_abs_curve_difference": float(np.abs(results["infsa_viz"] - results["quantus"]).max()),
    }
