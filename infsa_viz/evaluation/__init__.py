"""Evaluation of explanation maps: one engine, one per-image record, one writer.

:func:`evaluate` scores every (model, method) on a :class:`~infsa_viz.data.LabelledImages`
set with every selected metric of the registry (:mod:`infsa_viz.metrics.registry`) and returns
:class:`ImageRecord` objects plus one summary row per (model, method), each with its resolved
protocol; :func:`write_evaluation` writes JSON + CSV (+ per-image CSV) + HTML. Every row figure
has a bootstrap interval over images (``<figure>_ci``, :mod:`.intervals`). The run's free choices
are one :class:`EvalSettings`; reference maps (the random floor, the oracles) are registered
map methods with a role (:func:`reference_methods`). :mod:`.interventions` measures what a model
used per scene object (the evidence ground truth), :mod:`.reliance` what it relies on, and
:mod:`.shortcut` the cue shares of the shortcut test. The statistics that judge an evaluation
(paired tests, seeds, the verdict, the meta-evaluation) are :mod:`infsa_viz.stats`', which reads
this package; this package never imports it.
"""

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
from .records import ImageRecord, per_image_figures, summarise
from .writer import TABLE_COLUMNS, records_csv, report, rows_csv, table_columns, write_evaluation

__all__ = [
    "TABLE_COLUMNS",
    "EvalSettings",
    "Evaluation",
    "ObjectImportance",
    "ImageRecord",
    "default_methods",
    "evaluate",
    "finish_rows",
    "object_importance",
    "per_image_figures",
    "records_csv",
    "reference_methods",
    "report",
    "rows_csv",
    "score_images",
    "summarise",
    "table_columns",
    "write_evaluation",
]
