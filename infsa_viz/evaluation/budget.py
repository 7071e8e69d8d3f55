"""An evaluation's (or an explanation's) size checked before any image is scored.

Every map method and metric states what one call holds and how many model passes it makes
(:meth:`MapMethod.estimate <infsa_viz.maps.MapMethod.estimate>`,
:meth:`Metric.estimate <infsa_viz.metrics.registry.Metric.estimate>`, :mod:`infsa_viz.estimate`);
:func:`check_maps` and :func:`check_evaluation` read those declarations for every model of a job
and refuse, in one line, the first call that cannot fit this machine or its method's bound, naming
the option that lowers it: the most images per call that fit (``chunk``), the perturbed copies per
forward (``batch_size``), or the method's own (a matrix-free solver, fewer steps, a smaller input).
:func:`evaluation_estimate` reads the same declarations for the whole job's time and peak memory, printed
before work (``infsa-viz evaluate`` prints it on stderr; the engine logs each finished chunk's time).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

from ..estimate import (
    Estimate,
    PassTime,
    Workload,
    available_memory,
    check_estimate,
    format_bytes,
    format_seconds,
    largest_batch,
    seconds_per_pass,
)
from ..maps import check_method

__all__ = ["JobEstimate", "Spell", "check_call", "check_evaluation", "check_maps", "cli_option", "evaluation_estimate",
           "library_option"]

#: How an option that lowers a job is spelled in a message: ``(name, value or None) -> text``.
Spell = Callable[[str, Any], str]


def library_option(name: str, value: Any = None) -> str:
    """``chunk=3`` (or ``chunk``): an argument of the library."""
    return name if value is None else f"{name}={value}"


def cli_option(name: str, value: Any = None) -> str:
    """``--chunk 3`` (or ``--chunk``): an option of the command line."""
    flag = f"--{name.replace('_', '-')}"
    return flag if value is None else f"{flag} {value}"


def check_call(estimate: Callable[[Workload], Estimate], work: Workload, subject: str, spell: Spell = library_option,
               budget: float | None = None, option: str = "chunk", leave_out: str = "") -> None:
    """Refuse a call whose ``estimate(work)`` is over its bounds or the memory available: at ``work.batch``
    images when fewer would fit (naming the most that fit as ``option``, spelled by ``spell``), else at
    one image (what even one image needs; ``leave_out`` names the list to leave it out of).

    Raises:
        ValueError: one line naming ``subject``, the estimate and what lowers it.
    """
    budget = available_memory() if budget is None else budget

    def stated(w: Workload) -> Estimate:
        found = estimate(w)
        if not leave_out:
            return found
        return dataclasses.replace(found, lower=" or ".join(x for x in (found.lower, f"leave it out of {leave_out}")
                                                            if x))

    found = stated(work)
    check_estimate(found, work, subject=subject, fewer=None, budget=float("inf"))  # the bounds on work first
    if found.bytes <= budget:
        return
    fits = largest_batch(estimate, work, budget=budget)
    if fits:
        check_estimate(found, work, subject=subject, budget=budget,
                       fewer=spell(option, fits) + " (the most images per call that fit)")
    one = work.with_batch(1)
    check_estimate(stated(one), one, subject=subject, budget=budget)


def check_maps(models: Sequence[tuple[str, nn.Module]], methods: Sequence[tuple[str, dict[str, Any]]], *,
               batch: int = 1, spell: Spell = library_option, option: str = "chunk",
               budget: float | None = None) -> None:
    """Refuse maps of ``methods`` (``(name, options)``) for ``models`` on ``batch`` images each, and each
    model's own forward, when one cannot fit (see :func:`~infsa_viz.estimate.check_estimate`); ``option``
    (spelled by ``spell``) sets the images per call.

    Raises:
        ValueError: one line naming the model, the method, the estimate and what lowers it.
    """
    budget = available_memory() if budget is None else budget
    for model_name, model in models:
        work = Workload.of(model, batch=batch)
        if work is None:
            continue
        check_call(lambda w: Estimate(w.forward(), "one forward"), work, f"model {model_name!r}: its forward", spell,
               budget, option)
        for method, options in methods:
            spec = check_method(method)
            resolved = spec.resolve(options)
            check_call(lambda w, spec=spec, resolved=resolved: spec.estimate(w, resolved), work,
                   f"model {model_name!r}: method {method!r}", spell, budget, option, spell("methods", None))


def check_evaluation(models: Sequence[tuple[str, nn.Module]], methods: Sequence[str], protocol: Any, *,
                     n_images: int, spell: Spell = library_option, budget: float | None = None) -> None:
    """Refuse an evaluation (:func:`~infsa_viz.evaluation.evaluate`) whose maps or metrics cannot fit a
    chunk of ``protocol.chunk`` images (the sanity checks: their first ``sanity_images``), before any
    image is scored.

    Raises:
        ValueError: one line naming the model, the method or metric, the estimate and what lowers it.
    """
    budget = available_memory() if budget is None else budget
    settings = protocol.resolved()
    chunk = max(1, min(protocol.chunk, n_images))
    calls = []
    for method in methods:
        spec = check_method(method)
        shared = {k: v for k, v in settings.items() if k in spec.from_settings}
        calls.append((method, {**shared, **protocol.options_for(method)}))
    check_maps(models, calls, batch=chunk, spell=spell, budget=budget)
    for model_name, model in models:
        work = Workload.of(model, batch=chunk)
        if work is None:
            continue
        for metric in protocol.image_metrics():
            check_call(lambda w, metric=metric: metric.estimate(w, settings), work,
                   f"model {model_name!r}: metric {metric.name!r}", spell, budget, leave_out=spell("metrics", None))
        for metric in protocol.row_metrics():  # on its first images at once
            count = min(int(settings[metric.subset]), n_images) if metric.subset else n_images
            if count:
                option = metric.subset or "chunk"
                check_maps([(model_name, model)], calls, batch=count, spell=spell, option=option, budget=budget)
                check_call(lambda w, metric=metric: metric.estimate(w, settings), work.with_batch(count),
                       f"model {model_name!r}: metric {metric.name!r}", spell, budget, option,
                       spell("metrics", None))


@dataclass(frozen=True)
class JobEstimate:
    """An evaluation's time and peak memory, estimated before any image is scored.

    Attributes:
        seconds: the estimated wall time: each model's passes times its measured seconds per pass at the
            batch the pass runs at (maps: a chunk of images; metrics: ``batch_size`` perturbed copies).
        passes: model passes in all (per model: images × (each method's declared passes + each metric's
            passes on the images it scores)); a forward and a backward count two.
        per_pass: model name → measured :class:`~infsa_viz.estimate.PassTime` (``None``: not measurable).
        peak_bytes: the largest call's estimate (a chunk's map or metric) plus the models' weights.
        images: images in the job; ``methods``: the map methods; ``models``: how many models.
    """

    seconds: float
    passes: float
    per_pass: dict[str, PassTime | None]
    peak_bytes: float
    images: int
    methods: tuple[str, ...]
    models: int

    def describe(self) -> str:
        """One line: ``about 3 min 20 s and 2.1 GB at the peak: 798 model passes (3 image(s) x 6 method(s) x 1
        model(s)); one forward: 0.8 s + 0.25 s per image, measured just now``."""
        rates = ", ".join(f"{t.fixed:.2g} s + {t.per_image:.2g} s per image" for t in self.per_pass.values()
                          if t is not None) or "not measured"
        return (f"about {format_seconds(self.seconds)} and {format_bytes(self.peak_bytes)} at the peak: "
                f"{self.passes:,.0f} model passes ({self.images} image(s) x {len(self.methods)} method(s) x "
                f"{self.models} model(s)); one forward: {rates}, measured just now")

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "passes": self.passes,
                "seconds_per_forward": {k: None if t is None else {"fixed": round(t.fixed, 5),
                                                                   "per_image": round(t.per_image, 5)}
                                        for k, t in self.per_pass.items()},
                "peak_bytes": self.peak_bytes, "images": self.images, "methods": list(self.methods),
                "models": self.models,
                "rule": "passes declared by every method and metric x the seconds of one forward per image at the "
                        "batch the pass runs at (fixed + per_image x batch per call, timed at 1 and 16 images on "
                        "this machine before the job)"}


def _passes(model: nn.Module, methods: Sequence[str], protocol: Any, n_images: int) -> tuple[list[tuple[float, float]],
                                                                                              float]:
    """``([(model passes, images per call)], the largest call's bytes)`` of one model's share of an evaluation."""
    settings = protocol.resolved()
    chunk = max(1, min(protocol.chunk, n_images))
    work = Workload.of(model, batch=chunk)
    if work is None:
        return [], 0.0
    groups, peak = [], work.forward()
    metrics = [(m, min(int(settings[m.subset]), n_images) if m.subset else n_images) for m in protocol.image_metrics()]
    for method in methods:
        spec = check_method(method)
        shared = {k: v for k, v in settings.items() if k in spec.from_settings}
        found = spec.estimate(work, spec.resolve({**shared, **protocol.options_for(method)}))
        groups.append((n_images * found.forwards, chunk))
        peak = max(peak, found.bytes)
        for metric, count in metrics:
            cost = metric.estimate(work.with_batch(min(chunk, max(count, 1))), settings)
            copies = min(chunk, max(count, 1)) * cost.forwards  # perturbed copies of a chunk, batched
            groups.append((count * cost.forwards, max(min(protocol.batch_size, copies), 1)))
            peak = max(peak, cost.bytes)
        for metric in protocol.row_metrics():
            count = min(int(settings[metric.subset]), n_images) if metric.subset else n_images
            if count:
                cost = metric.estimate(work.with_batch(count), settings)
                groups.append((count * cost.forwards, count))
                peak = max(peak, cost.bytes)
    return groups, peak


def evaluation_estimate(models: Sequence[tuple[str, nn.Module]], methods: Sequence[str], protocol: Any, *,
                        n_images: int, per_pass: Callable[[nn.Module], PassTime | None] = seconds_per_pass,
                        ) -> JobEstimate:
    """Time and peak memory of :func:`~infsa_viz.evaluation.evaluate` on ``n_images`` images, before work.

    Every method's and metric's :class:`~infsa_viz.estimate.Estimate` says how many model passes per image
    it makes and what one call holds; each model's forward is timed here at 1 and 16 images
    (:func:`~infsa_viz.estimate.seconds_per_pass`, a few seconds for a ViT-B/16 on 2 CPU threads). The
    time is each group of passes times the seconds per pass at the batch it runs at (a map: a chunk of
    images; a removal metric: ``batch_size`` perturbed copies); dense solves, eigenproblems and metric
    arithmetic are left out (at 197 tokens they are a small part of a pass). The peak is the largest
    call plus the weights.

    Args:
        models: ``(name, model)`` pairs.
        methods: map methods.
        protocol: the :class:`~infsa_viz.evaluation.EvalSettings`.
        n_images: images in the job.
        per_pass: a model's :class:`~infsa_viz.estimate.PassTime` (default: measured now).

    Returns:
        :class:`JobEstimate`.
    """
    seconds, passes, peak, rates = 0.0, 0.0, 0.0, {}
    weights = 0.0
    for name, model in models:
        groups, largest = _passes(model, methods, protocol, n_images)
        rate = per_pass(model) if groups else None
        rates[name] = rate
        passes += sum(count for count, _ in groups)
        seconds += sum(count * rate.per_pass(batch) for count, batch in groups) if rate is not None else 0.0
        peak = max(peak, largest)
        weights += sum(4.0 * p.numel() for p in model.parameters())
    return JobEstimate(seconds=seconds, passes=passes, per_pass=rates, peak_bytes=peak + weights, images=n_images,
                       methods=tuple(methods), models=len(models))
