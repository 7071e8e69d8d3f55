"""Evaluation of explanation maps: one engine, one per-image record, one writer.

:func:`evaluate` scores every (model, method) on a :class:`~infsa_viz.data.LabelledImages`
set and returns :class:`ImageRecord` objects plus one summary row per (model, method), each with
its resolved protocol; :func:`write_evaluation` writes JSON + CSV (+ per-image CSV) + HTML.
"""

from .engine import TARGETS, EvalProtocol, Evaluation, default_methods, evaluate, score_images
from .records import SCALAR_FIELDS, ImageRecord, summarise
from .writer import TABLE_COLUMNS, records_csv, report, rows_csv, write_evaluation

__all__ = [
    "SCALAR_FIELDS",
    "TABLE_COLUMNS",
    "TARGETS",
    "EvalProtocol",
    "Evaluation",
    "ImageRecord",
    "default_methods",
    "evaluate",
    "records_csv",
    "report",
    "rows_csv",
    "score_images",
    "summarise",
    "write_evaluation",
]
