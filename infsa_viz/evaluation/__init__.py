"""Evaluation of explanation maps: one engine, one per-image record, one writer.

:func:`evaluate` scores every (model, method) on a :class:`~infsa_viz.data.LabelledImages`
set and returns :class:`ImageRecord` objects plus one summary row per (model, method), each with
its resolved protocol; :func:`write_evaluation` writes JSON + CSV (+ per-image CSV) + HTML.
Every row figure has a bootstrap interval over images (``<figure>_ci``); the report adds paired
tests, benchmark headroom and the spread across training seeds (:mod:`.comparisons`, built on
:mod:`.stats`) and the call across seeds of each variant against softmax (:mod:`.verdict`);
:mod:`.reference` holds the box-oracle map; :mod:`.interventions` measures what a model used per
scene object (the evidence ground truth) and :mod:`.meta` meta-evaluates any metric.
"""

from .comparisons import benchmark_quality, compare, paired_tests, seed_summary
from .engine import (
    TARGETS,
    EvalProtocol,
    Evaluation,
    default_methods,
    evaluate,
    score_images,
)
from .interventions import ObjectImportance, object_importance
from .meta import FigureMeta, MetaEvaluation, meta_evaluate
from .records import SCALAR_FIELDS, ImageRecord, per_image_figures, summarise
from .reference import REFERENCE_METHODS, box_oracle, check_evaluation_method
from .verdict import quality_across_seeds, variant_verdict
from .writer import TABLE_COLUMNS, records_csv, report, rows_csv, write_evaluation

__all__ = [
    "REFERENCE_METHODS",
    "SCALAR_FIELDS",
    "TABLE_COLUMNS",
    "TARGETS",
    "EvalProtocol",
    "Evaluation",
    "FigureMeta",
    "MetaEvaluation",
    "ObjectImportance",
    "ImageRecord",
    "benchmark_quality",
    "box_oracle",
    "check_evaluation_method",
    "compare",
    "default_methods",
    "evaluate",
    "meta_evaluate",
    "object_importance",
    "paired_tests",
    "per_image_figures",
    "quality_across_seeds",
    "records_csv",
    "report",
    "rows_csv",
    "score_images",
    "seed_summary",
    "summarise",
    "variant_verdict",
    "write_evaluation",
]
