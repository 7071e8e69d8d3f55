"""The statistics that judge an evaluation: paired tests, seeds, the verdict, calibration, meta-evaluation.

The evaluation engine (:mod:`infsa_viz.evaluation`) scores maps per image and summarises them in
rows, each figure with its interval over images; this package reads its records and rows and never
the other way round. :func:`with_comparisons` adds the sections of an evaluation report beyond its
rows: paired tests, benchmark headroom and the spread across training seeds (:mod:`.comparisons`,
built on :mod:`.paired`) and the call across seeds of each variant against softmax
(:mod:`.verdict`, built on :mod:`.seed_stats` and :mod:`.image_sets`). :mod:`.calibration`
simulates the verdict's error rates, :mod:`.sensitivity` recomputes MoRF-AOC under every protocol,
:mod:`.meta` meta-evaluates any metric and :mod:`.shortcut` judges the shortcut test over models.

Example:
    >>> from infsa_viz.evaluation import evaluate, write_evaluation
    >>> result = with_comparisons(evaluate(models, methods, data))  # doctest: +SKIP
    >>> write_evaluation(result, "out/report.json")  # doctest: +SKIP
"""

from .comparisons import benchmark_quality, compare, paired_tests, seed_summary, with_comparisons
from .meta import FigureMeta, MetaEvaluation, meta_evaluate
from .verdict import quality_across_seeds, variant_verdict

__all__ = [
    "FigureMeta",
    "MetaEvaluation",
    "benchmark_quality",
    "compare",
    "meta_evaluate",
    "paired_tests",
    "quality_across_seeds",
    "seed_summary",
    "variant_verdict",
    "with_comparisons",
]
