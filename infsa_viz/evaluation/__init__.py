"""Evaluation of explanation maps: one engine, one per-image record, one writer.

:func:`evaluate` scores every (model, method) on a :class:`~infsa_viz.data.LabelledImages`
set with every selected metric of the registry (:mod:`infsa_viz.metrics.registry`) and returns
:class:`ImageRecord` objects plus one summary row per (model, method), each with its resolved
protocol; :func:`write_evaluation` writes JSON + CSV (+ per-image CSV) + HTML. Every row figure
has a bootstrap interval over images (``<figure>_ci``); the report adds paired tests, benchmark
headroom and the spread across training seeds (:mod:`.comparisons`, built on :mod:`.stats`) and
the call across seeds of each variant against softmax (:mod:`.verdict`). The run's free choices
are one :class:`EvalSettings`; reference maps (the random floor, the oracles) are registered
map methods with a role (:func:`reference_methods`). :mod:`.interventions` measures what a model
used per scene object (the evidence ground truth) and :mod:`.meta` meta-evaluates any metric.
"""

from .comparisons import benchmark_quality, compare, paired_tests, seed_summary
from .engine import (
    EvalSettings,
    Evaluation,
    default_methods,
    evaluate,
    finish_rows,
    reference_methods,
    score_images,
)
from .interventions import ObjectImportance, object_importance
from .meta import FigureMeta, MetaEvaluation, meta_evaluate
from .records import ImageRecord, per_image_figures, summarise
from .verdict import quality_across_seeds, variant_verdict
from .writer import TABLE_COLUMNS, records_csv, report, rows_csv, table_columns, write_evaluation

__all__ = [
    "TABLE_COLUMNS",
    "EvalSettings",
    "Evaluation",
    "FigureMeta",
    "MetaEvaluation",
    "ObjectImportance",
    "ImageRecord",
    "benchmark_quality",
    "compare",
    "default_methods",
    "evaluate",
    "finish_rows",
    "meta_evaluate",
    "object_importance",
    "paired_tests",
    "per_image_figures",
    "quality_across_seeds",
    "records_csv",
    "reference_methods",
    "report",
    "rows_csv",
    "score_images",
    "seed_summary",
    "summarise",
    "table_columns",
    "variant_verdict",
    "write_evaluation",
]
