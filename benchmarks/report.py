"""Benchmark summary (throughput ratios, largest size completed, log-log slopes) and HTML plots."""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from infsa_viz.io import atomic_write, write_json
from infsa_viz.model import VARIANTS, LinearInfSAAttention, PureInfSAAttention, SoftmaxAttention

__all__ = ["GOALS", "check_goals", "loglog_slope", "summarize", "write_html", "write_report"]

#: The scaling goals of the benchmark issue, checked on the ``shipped`` shape.
GOALS = {
    "throughput_ratio_at": 1024,
    "throughput_ratio_min": 10.0,
    "largest_resolution": 9216,
    "peak_memory_max_bytes": 16 * 10**9,
    "attention_slope_max": 1.1,
    "pure_resolution": 2048,
    "pure_memory_max_ratio": 2.0,
    "pure_ratio_at": 1024,
    "pure_ratio_min": 0.5,
    "spectral_methods": ("visits", "perron"),
    "spectral_resolutions": (1024, 2048),
    "spectral_memory_max_bytes": 4 * 10**9,
}

#: The upper range of the attention slope (tokens at or above this), where fixed per-call costs no
#: longer flatten the fit: the asymptotic exponent.
UPPER_SLOPE_MIN_TOKENS = 16384


def loglog_slope(tokens: Sequence[float], times: Sequence[float]) -> float:
    """Slope of the least-squares line through ``(log tokens, log times)`` (``numpy.polyfit``).

    A slope of 1 means time ∝ N, 2 means time ∝ N².

    Returns:
        The slope as a Python ``float``; ``nan`` with a warning when fewer than two distinct
        token counts are given.

    Raises:
        ValueError: if the sequences differ in length or hold a non-positive value.

    Example:
        >>> round(loglog_slope([1e3, 1e4, 1e5], [2e-3, 2e-2, 2e-1]), 6)
        1.0
    """
    x = np.asarray(tokens, dtype=float)
    y = np.asarray(times, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"tokens (shape {x.shape}) and times (shape {y.shape}) must be 1-D and equally "
                         "long")
    if np.any(~(x > 0)) or np.any(~(y > 0)):
        raise ValueError("tokens and times must all be positive (they are fitted on a log scale)")
    if len(np.unique(x)) < 2:
        warnings.warn("a log-log slope needs at least two distinct token counts; returning nan",
                      stacklevel=2)
        return float("nan")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _ok(cases: Iterable[dict[str, Any]], section: str) -> list[dict[str, Any]]:
    return [c for c in cases if c["section"] == section and c["status"] == "ok"]


def _slopes(cases: list[dict[str, Any]], section: str, key: str = "latency_s",
            min_tokens: int = 0) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in (r for r in _ok(cases, section) if r["tokens"] >= min_tokens):
        out.setdefault(row["shape"], {}).setdefault(row["variant"], []).append(row)
    slopes: dict[str, dict[str, Any]] = {}
    for shape, by_variant in out.items():
        for variant, rows in by_variant.items():
            tokens = [r["tokens"] for r in rows]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                slope = loglog_slope(tokens, [r[key] for r in rows])
            slopes.setdefault(shape, {})[variant] = {
                "slope": None if math.isnan(slope) else round(slope, 4),
                "tokens_min": min(tokens), "tokens_max": max(tokens), "points": len(rows),
            }
    return slopes


def summarize(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Ratios to the baseline (``VARIANTS[0]``), largest sizes completed, slopes, goals.

    Returns:
        ``throughput_ratio[shape][resolution]["<variant>/<baseline>"]`` where both ran ``ok``;
        ``largest_completed[shape][variant]`` (resolution, tokens, images/s, peak memory, or
        ``None``); ``attention_slope`` / ``model_latency_slope`` ``[shape][variant]``: log-log
        slope of median wall-clock time vs tokens over the sizes that completed, and
        ``attention_cpu_slope`` the same for CPU time (steadier on a shared machine); ``goals``:
        see :func:`check_goals`.
    """
    baseline = VARIANTS[0]
    model = _ok(cases, "model")
    by_key = {(r["shape"], r["resolution"], r["variant"]): r for r in model}
    ratios: dict[str, dict[str, dict[str, float]]] = {}
    for (shape, resolution, variant), row in sorted(by_key.items()):
        base = by_key.get((shape, resolution, baseline))
        if variant == baseline or base is None:
            continue
        ratio = row["images_per_s"] / base["images_per_s"]
        by_size = ratios.setdefault(shape, {}).setdefault(str(resolution), {})
        by_size[f"{variant}/{baseline}"] = round(ratio, 4)
    largest: dict[str, dict[str, Any]] = {}
    for row in (c for c in cases if c["section"] == "model"):
        entry = largest.setdefault(row["shape"], {}).setdefault(row["variant"], None)
        if row["status"] == "ok" and (entry is None or row["resolution"] > entry["resolution"]):
            largest[row["shape"]][row["variant"]] = {
                "resolution": row["resolution"], "tokens": row["tokens"],
                "images_per_s": row["images_per_s"], "peak_memory_bytes": row["peak_memory_bytes"],
            }
    summary = {
        "baseline": baseline,
        "throughput_ratio": ratios,
        "largest_completed": largest,
        "attention_slope": _slopes(cases, "attention"),
        "attention_cpu_slope": _slopes(cases, "attention", "cpu_s"),
        "attention_slope_upper": _slopes(cases, "attention", min_tokens=UPPER_SLOPE_MIN_TOKENS),
        "naive_vs_ours": naive_vs_ours(cases),
        "spectral": spectral_rows(cases),
        "model_latency_slope": _slopes(cases, "model"),
        "statuses": {s: sum(c["status"] == s for c in cases) for s in sorted({c["status"] for c in cases})},
    }
    summary["goals"] = check_goals(summary, cases)
    return summary


def check_goals(
    summary: dict[str, Any], cases: list[dict[str, Any]], *, shape: str = "shipped"
) -> list[dict[str, Any]]:
    """The issue's scaling goals (:data:`GOALS`) on ``shape``: value measured and whether it is met.

    ``met`` is ``None`` when the benchmark did not measure what a goal needs. The slope goal is
    stated over 1k … 256k tokens; ``tokens`` gives the range the slope was actually fitted on.
    """
    return [*_linear_goals(summary, cases, shape), *_pure_goals(summary, cases, shape), *_spectral_goals(cases)]


def naive_vs_ours(cases: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``[shape][tokens][variant]``: the naive dense formulas against our layer at the same size.

    ``time_ratio`` = naive latency / ours and ``memory_ratio`` = naive peak memory / ours (both > 1
    mean ours is faster or smaller); ``naive`` / ``ours`` give each side's status, latency and peak.
    """
    ours = {(r["shape"], r["tokens"], r["variant"]): r for r in cases if r["section"] == "attention"}
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for row in (r for r in cases if r["section"] == "naive"):
        mine = ours.get((row["shape"], row["tokens"], row["variant"]))
        if mine is None:
            continue
        entry: dict[str, Any] = {side: {"status": r["status"], "latency_s": r.get("latency_s"),
                                        "peak_memory_bytes": r.get("peak_memory_bytes")}
                                 for side, r in (("naive", row), ("ours", mine))}
        if row["status"] == mine["status"] == "ok":
            entry["time_ratio"] = round(row["latency_s"] / mine["latency_s"], 4)
            entry["memory_ratio"] = round(row["peak_memory_bytes"] / mine["peak_memory_bytes"], 4)
        table.setdefault(row["shape"], {}).setdefault(str(row["tokens"]), {})[row["variant"]] = entry
    return table


def spectral_rows(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spectral section in short: status, time, peak memory and the solver's convergence.

    ``solver`` is the map's solver (GMRES, Neumann, power iteration, LAPACK eig); the Perron map's
    metadata calls it ``method``, which here would clash with the map method's name.
    """
    rows = []
    for row in (r for r in cases if r["section"] == "spectral"):
        meta = row.get("map_metadata") or {}
        short = {key: row.get(key) for key in ("variant", "method", "resolution", "tokens", "status",
                                               "latency_s", "peak_memory_bytes", "finite")}
        short["solver"] = meta.get("solver", meta.get("method"))
        short.update({key: meta[key] for key in ("iterations", "max_residual") if key in meta})
        rows.append(short)
    return rows


def _spectral_goals(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Visits and Perron maps of the shipped pure-InfSA model at each goal size under the memory goal."""
    pure, limit = PureInfSAAttention.variant, GOALS["spectral_memory_max_bytes"]
    goals = []
    for method in GOALS["spectral_methods"]:
        for side in GOALS["spectral_resolutions"]:
            row = next((r for r in cases if r["section"] == "spectral" and r["variant"] == pure
                        and r.get("method") == method and r["resolution"] == side), None)
            ok = row is not None and row["status"] == "ok"
            goals.append({"goal": f"{method} map of the shipped {pure} model at {side}² with peak memory "
                                  f"< {limit / 10**9:g} GB",
                          "value": row["peak_memory_bytes"] if ok else (row["status"] if row else None),
                          "met": None if row is None else ok and row["peak_memory_bytes"] < limit})
    return goals


def _case(cases: list[dict[str, Any]], shape: str, variant: str, resolution: int) -> dict[str, Any] | None:
    return next((c for c in cases if c["section"] == "model" and c["shape"] == shape
                 and c["variant"] == variant and c["resolution"] == resolution), None)


def _pure_goals(summary: dict[str, Any], cases: list[dict[str, Any]], shape: str) -> list[dict[str, Any]]:
    """Pure InfSA (blockwise) reaches ``pure_resolution`` within ``pure_memory_max_ratio``× softmax's
    peak memory there, and runs ``≥ pure_ratio_min``× softmax's images/s at ``pure_ratio_at``."""
    pure, softmax = PureInfSAAttention.variant, SoftmaxAttention.variant
    side, at = GOALS["pure_resolution"], GOALS["pure_ratio_at"]
    big, base = _case(cases, shape, pure, side), _case(cases, shape, softmax, side)
    memory = None
    if big is not None and base is not None and big["status"] == base["status"] == "ok":
        memory = round(big["peak_memory_bytes"] / base["peak_memory_bytes"], 4)
    ratio = summary["throughput_ratio"].get(shape, {}).get(str(at), {}).get(f"{pure}/{softmax}")
    return [
        {"goal": f"{pure} completes {side}² ({shape}) with peak memory ≤ {GOALS['pure_memory_max_ratio']:g}× "
                 f"{softmax}'s",
         "value": memory if memory is not None else (big["status"] if big else None),
         "met": None if big is None else (big["status"] == "ok" and memory is not None
                                          and memory <= GOALS["pure_memory_max_ratio"])},
        {"goal": f"{pure} images/s ≥ {GOALS['pure_ratio_min']:g}× {softmax} at {at}² ({shape})",
         "value": ratio, "met": None if ratio is None else ratio >= GOALS["pure_ratio_min"]},
    ]


def _linear_goals(summary: dict[str, Any], cases: list[dict[str, Any]], shape: str) -> list[dict[str, Any]]:
    linear, softmax = LinearInfSAAttention.variant, SoftmaxAttention.variant
    at, side = GOALS["throughput_ratio_at"], GOALS["largest_resolution"]
    ratio = summary["throughput_ratio"].get(shape, {}).get(str(at), {}).get(f"{linear}/{softmax}")
    big = _case(cases, shape, linear, side)
    big_ok = big is not None and big["status"] == "ok"
    fit = summary["attention_slope"].get(shape, {}).get(linear, {})
    slope = fit.get("slope")
    memory_max = GOALS["peak_memory_max_bytes"]
    return [
        {"goal": f"{linear} images/s ≥ {GOALS['throughput_ratio_min']:g}× {softmax} at {at}² ({shape})",
         "value": ratio, "met": None if ratio is None else ratio >= GOALS["throughput_ratio_min"]},
        {"goal": f"{linear} completes {side}² ({shape}) with peak memory < {memory_max / 10**9:g} GB",
         "value": big["peak_memory_bytes"] if big_ok else (big["status"] if big else None),
         "met": None if big is None else big_ok and big["peak_memory_bytes"] < memory_max},
        {"goal": f"{linear} attention time vs tokens: log-log slope ≤ {GOALS['attention_slope_max']:g} ({shape})",
         "value": slope, "met": None if slope is None else slope <= GOALS["attention_slope_max"],
         "tokens": [fit["tokens_min"], fit["tokens_max"]] if fit else None,
         "upper_slope": summary.get("attention_slope_upper", {}).get(shape, {}).get(linear)},
    ]


def _traces(cases: list[dict[str, Any]], section: str, y: str) -> list[tuple[str, list[int], list[float]]]:
    series: dict[str, tuple[list[int], list[float]]] = {}
    for row in _ok(cases, section):
        xs, ys = series.setdefault(f"{row['variant']} · {row['shape']}", ([], []))
        xs.append(row["tokens"])
        ys.append(row[y])
    return [(name, xs, ys) for name, (xs, ys) in series.items()]


def write_html(report: dict[str, Any], path: str | Path) -> Path:
    """One HTML page (loads plotly.min.js from its own folder, works offline): images/s, peak memory and
    attention time vs tokens, log-log, one trace per variant × shape."""
    import plotly.graph_objects as go

    cases = report["cases"]
    proto = report["protocol"]
    panels = [
        ("model", "images_per_s", "Model throughput (images/s)"),
        ("model", "peak_memory_bytes", "Model peak memory (bytes)"),
        ("attention", "latency_s", "One attention layer: median time (s)"),
    ]
    parts = []
    for section, y, title in panels:
        traces = _traces(cases, section, y)
        if not traces:
            continue
        fig = go.Figure([go.Scatter(x=xs, y=ys, name=name, mode="lines+markers") for name, xs, ys in traces])
        fig.update_layout(title=title, xaxis_title="tokens", yaxis_title=title, height=460,
                          xaxis_type="log", yaxis_type="log", template="plotly_white")
        # plotly.js is loaded from the report's folder (one shared copy, works offline)
        parts.append(fig.to_html(full_html=False, include_plotlyjs="directory" if not parts else False))
    if not parts:
        parts.append("<p>No case completed; nothing to plot.</p>")
    about = (f"{proto.get('cpu_model')}, {proto.get('cuda_device') or 'no GPU'}, torch {proto.get('torch')}, "
             f"{proto.get('date')}; statuses {report['summary'].get('statuses')}")
    title = "infsa-viz throughput benchmark"
    header = f"<h1>{title} ({html.escape(str(proto.get('device')))})</h1><p>{html.escape(about)}</p>"
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>" \
           f"<body>{header}{''.join(parts)}</body></html>\n"
    return atomic_write(path, page)


def write_report(report: dict[str, Any], path: str | Path) -> tuple[Path, Path]:
    """Write the JSON report to ``path`` and its plots next to it (same stem, ``.html``)."""
    from infsa_viz.evaluation.writer import write_plotly_js

    path = Path(path)
    write_json(path, report)
    write_plotly_js(path.parent)
    return path, write_html(report, path.with_suffix(".html"))
