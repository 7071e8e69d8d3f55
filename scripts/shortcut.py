r"""The shortcut test on cued digits: does each map reveal that a model takes the cue as a shortcut?
(maintainer script)

    python scripts/shortcut.py                     # every committed cued seed model, 100 test images
    python scripts/shortcut.py --tables-only       # rebuild the report and docs/cued.md from the parts

For each trained model ``models/seeds/cued-digits/{p10,p100}/<variant>-seed<k>`` (p10: the cue
useless; p100: the cue a shortcut), on the first ``--n-images`` images of the shared test split,
:func:`infsa_viz.evaluation.shortcut.measure_model` computes the cue share of every map of the
verdict, of the model-ignorant controls (edge, intensity), the random floor and the evidence-oracle
ceiling, on the images as generated and, for the models of ``--salience-seeds`` (default 0–3), at
every other salience of the cue (faint, large, absent), and the cue's measured evidence. Each model's measurement is a part ``metrics/shortcut-cued-digits/<digest>.json`` named by
the sha256 of the model's weights file and holding the protocol's key, so a rerun computes only new
models (or every model after a protocol change).
:func:`~infsa_viz.stats.shortcut.shortcut_tables` turns the parts into the report
``metrics/shortcut-cued-digits.json`` (written atomically) and the section ``shortcut`` of
``docs/cued.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(ROOT))
from infsa_viz.cli import check_outputs, script_main, script_parser  # noqa: E402
from scripts.doc_sections import VARIANT_NAMES, write_section  # noqa: E402
from scripts.verdict import METHODS as VERDICT_METHODS  # noqa: E402
from scripts.verdict_benchmarks import seed_models  # noqa: E402

SEEDS_DIR = Path("models") / "seeds"
DATA = "cued-digits"
OUT = Path("metrics") / "shortcut-cued-digits.json"
PARTS = Path("metrics") / "shortcut-cued-digits"
DOCS = Path("docs") / "cued.md"
#: Raise when a change moves the parts' numbers: parts of another version are recomputed.
PART_VERSION = 1


def methods() -> list[str]:
    """The verdict's maps, then every model-ignorant control, the floor and the evidence ceiling (from the registries)."""
    from infsa_viz.maps import METHODS
    from infsa_viz.metrics.registry import FIGURES

    controls = [n for n, m in METHODS.items() if m.role in ("model_ignorant", "floor")]
    return [*VERDICT_METHODS, *controls, FIGURES["evidence_mass_accuracy"].ceiling]


def protocol_key(n_images: int, names: list[str], salience: list[str]) -> str:
    from infsa_viz.evaluation.shortcut import IDENTICAL_TOLERANCE

    settings = {"version": PART_VERSION, "n_images": n_images, "methods": names, "salience": salience,
                "tolerance": IDENTICAL_TOLERANCE, "data": DATA}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def weights_digest(folder: str) -> str:
    """The sha256 of the model's weights file (what names its part)."""
    from infsa_viz.weights import file_sha256

    return file_sha256(Path(folder) / "model.safetensors")


def read_part(folder: str, key: str, parts: Path) -> dict[str, Any] | None:
    """The model's part when one of this protocol exists for its weights, else ``None``."""
    from infsa_viz.io import read_json

    digest = weights_digest(folder)
    path = parts / f"{digest[:24]}.json"
    if path.is_file():
        part = read_json(path)
        if part.get("digest") == digest and part.get("protocol_key") == key:
            return part
    return None


def measure(folder: str, key: str, n_images: int, names: list[str], salience: list[str],
            parts: Path) -> dict[str, Any]:
    """One model's part: read when its weights digest and protocol match, else measured and written."""
    from infsa_viz import load_model
    from infsa_viz.data import test_split
    from infsa_viz.evaluation.shortcut import measure_model
    from infsa_viz.io import write_json

    found = read_part(folder, key, parts)
    if found is not None:
        return found
    digest = weights_digest(folder)
    path = parts / f"{digest[:24]}.json"
    model = load_model(folder)
    data = test_split(n_images, benchmark=DATA)
    result = measure_model(model, data.scenes, methods=names, salience=salience)
    part = {"model": folder, "digest": digest, "protocol_key": key, "variant": model.config.attention,
            "result": result.to_dict()}
    write_json(path, part)
    return part


def _model_info(folder: str) -> tuple[str, str, int]:
    from infsa_viz.stats.verdict import split_seed

    path = Path(folder)
    variant, seed = split_seed(path.name)
    return path.parent.name, variant, int(seed)


def _points(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:+.1f}"


def tables_markdown(report: dict[str, Any]) -> str:
    """The docs section: per variant and map, the rise with its interval, the detection AUROC, the
    held-out false-positive rate, the image-level ρ and the salience R²; the difference table."""
    t = report["tables"]
    rows = {(r["variant"], r["method"]): r for r in t["rise"]}
    det = {(r["variant"], r["method"]): r for r in t["detection"]}
    img = {(r["variant"], r["method"]): r for r in t["image_level"]}
    sal = {(r["variant"], r["method"]): r for r in t["salience"]}
    lines = ["| variant | map | role | seeds | cue-share rise p10 → p100 [95 % t-interval] | detection AUROC [95 %] | "
             "false positives on useless-cue models [95 %]; true positives (held-out threshold) | image-level ρ with the cue's evidence (p100) | "
             "R² regime / salience (seeds 0–3) | beats the edge map: rise / AUROC / ρ |",
             "|---|---|---|---:|---|---|---|---|---|---|"]
    for (variant, method), r in rows.items():
        d, i, s = det[variant, method], img[variant, method], sal[variant, method]
        same = f" (= {r['same_map_as']})" if r.get("same_map_as") else ""
        beats = {True: "yes", False: "**no**", None: "–"}
        verdicts = [x.get("beats_edge") for x in (r, d, i)]
        beat = "–" if all(v is None for v in verdicts) else "/".join(beats[v] for v in verdicts)
        fp = (f"{d['false_positives']}/{d['negatives']} [{100 * d['fpr_low']:.0f}, {100 * d['fpr_high']:.0f} %]; "
              f"TP {d['true_positives']}/{d['positives']}" if d.get("negatives") else "–")
        auc = f"{d['auroc']:.2f} [{d['low']:.2f}, {d['high']:.2f}]" if d.get("auroc") is not None else "–"
        rise = f"{_points(r.get('mean'))} [{_points(r.get('low'))}, {_points(r.get('high'))}]" if r.get("n") else "–"
        rho = f"{i['mean']:.2f} [{i['low']:.2f}, {i['high']:.2f}]" if i.get("low") is not None else "–"
        r2 = (f"{s['r2_regime']:.2f} / {s['r2_salience']:.2f}" if s.get("r2_regime") is not None else "–")
        lines.append(f"| {VARIANT_NAMES.get(variant, variant)} | `{method}`{same} | {r['role']} | {r.get('n', 0)} | "
                     f"{rise} | {auc} | {fp} | {rho} | {r2} | {beat} |")
    diff = t["difference"]
    lines += ["", f"InfSA − softmax difference of the rise, paired by seed (points; Holm over the "
              f"{diff['family_size']} distinct explanation maps; detectable: 80 % power at α/m):", "",
              "| variant | map | seeds | difference [95 % t-interval] | p (Holm) | call | detectable |",
              "|---|---|---:|---|---|---|---:|"]
    for r in diff["rows"]:
        if not r.get("n"):
            continue
        if r["in_family"]:
            tail = f"{r['p_holm']:.4f} | {r['call']} | {r['detectable']:.1f}" if r.get("detectable") is not None \
                else f"{r['p_holm']:.4f} | {r['call']} | –"
        else:
            why = ("same map as " + ", ".join(f"{VARIANT_NAMES.get(v, v)} `{m}`" for v, m in r["same_map_as"].items())
                   if r.get("same_map_as") else r["role"])
            tail = f"– | not in the family ({why}) | –"
        lines.append(f"| {VARIANT_NAMES.get(r['variant'], r['variant'])} | `{r['method']}` | {r['n']} | "
                     f"{_points(r['mean'])} [{_points(r.get('low'))}, {_points(r.get('high'))}] | {tail} |")
    return "\n".join(lines)


def _span(values: list[float], fmt: str = "{:.2f}") -> str:
    found = [v for v in values if v is not None and math.isfinite(v)]
    if not found:
        return "–"
    low, high = min(found), max(found)
    return fmt.format(low) if low == high else f"{fmt.format(low)}–{fmt.format(high)}"


def answer_markdown(report: dict[str, Any]) -> str:
    """The answer in words, every number read from the report."""
    t = report["tables"]
    explanation = [r for r in t["rise"] if r["role"] == "explanation"]
    det = [r for r in t["detection"] if r["role"] == "explanation" and r.get("auroc") is not None]
    models = report["models"]
    seeds = {}
    for m in models:
        seeds.setdefault(m["variant"], set()).add(m["seed"])
    above = sum(1 for r in explanation if r.get("low") is not None and r["low"] > 0)
    fp = sum(r["false_positives"] for r in det)
    negatives = sum(r["negatives"] for r in det)
    called = [r for r in t["difference"]["rows"] if r.get("call") in ("higher", "lower")]
    calls = "; ".join(f"{VARIANT_NAMES.get(r['variant'], r['variant'])} `{r['method']}` {r['call']} "
                      f"({_points(r['mean'])} [{_points(r['low'])}, {_points(r['high'])}] points, Holm p = "
                      f"{r['p_holm']:.4f})" for r in called) or "none"
    oracle = {r["variant"]: r for r in t["difference"]["rows"] if r["role"] == "ceiling"}
    attention_type = [r for r in t["image_level"] if r["role"] == "explanation" and r["method"] != "chefer2021"]
    not_edge = [f"{VARIANT_NAMES.get(r['variant'], r['variant'])} `{r['method']}`" for r in attention_type
                if r.get("beats_edge") is False]
    chefer = [r for r in t["image_level"] if r["method"] == "chefer2021"]
    ceiling = [r for r in t["image_level"] if r["role"] == "ceiling"]
    sal = [r for r in t["salience"] if r["role"] == "explanation" and r.get("r2_regime") is not None]
    sal_oracle = [r for r in t["salience"] if r["role"] == "ceiling" and r.get("r2_regime") is not None]
    seeds_text = ", ".join(f"{VARIANT_NAMES.get(v, v)} {len(k)}" for v, k in seeds.items())
    lines = [
        f"**The answer** ({len(models)} models; seeds per variant and setting: {seeds_text}; "
        f"{report['protocol']['n_images']} test images each). *Unit*: a trained model. *Test*: the per-seed rise "
        "p100 − p10 of a map's cue share (t-test over seeds) and the detection AUROC over models. *Error rate "
        f"under the null*: at thresholds fixed on held-out seeds, {fp} of {negatives} useless-cue model × "
        "explanation-map judgements were called \"reliance detected\".",
        "",
        f"* {above} of {len(explanation)} explanation-map rows rise with a 95 % interval above 0 (rises "
        f"{_span([r['mean'] for r in explanation], '{:+.1f}')} points; the evidence oracle "
        f"{_span([r['mean'] for r in t['rise'] if r['role'] == 'ceiling'], '{:+.1f}')}); detection AUROC "
        f"{_span([r['auroc'] for r in det])} (lower bounds {_span([r['low'] for r in det])}). The model-ignorant "
        "maps and the random map give every model the same share (rise 0, AUROC 0.5).",
        f"* InfSA − softmax difference of the rise, called (family of {t['difference']['family_size']} distinct "
        f"maps): {calls}. The evidence oracle's difference (not in the family): "
        + "; ".join(f"{VARIANT_NAMES.get(v, v)} {_points(r['mean'])} [{_points(r.get('low'))}, "
                    f"{_points(r.get('high'))}]" for v, r in oracle.items()) + ".",
        f"* Image level (within shortcut models): Spearman's ρ between cue share and the cue's evidence "
        f"{_span([r.get('mean') for r in attention_type])} for attention-type maps, "
        f"{_span([r.get('mean') for r in chefer])} for Chefer 2021, {_span([r.get('mean') for r in ceiling])} for "
        f"the evidence oracle; not above the edge map: {', '.join(not_edge) or 'none'}.",
        f"* Salience control: R² by salience {_span([r['r2_salience'] for r in sal])} against "
        f"{_span([r['r2_regime'] for r in sal])} by training regime for the explanation maps; the evidence "
        f"oracle {_span([r['r2_salience'] for r in sal_oracle])} against {_span([r['r2_regime'] for r in sal_oracle])}.",
    ]
    return "\n".join(lines)


@script_main("shortcut.py")
def main(argv: list[str] | None = None) -> int:
    parser = script_parser("shortcut.py", __doc__)
    from infsa_viz.commands.lists import comma_ints, output_file

    parser.add_argument("--seeds", type=comma_ints, default=None, help="seeds to use (default: every trained one)")
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR, help=f"default {SEEDS_DIR}")
    parser.add_argument("--n-images", type=int, default=100, help="first test images per model (default 100)")
    parser.add_argument("--salience-seeds", type=comma_ints, default=(0, 1, 2, 3),
                        help="seeds whose models also run the salience control (default 0,1,2,3)")
    parser.add_argument("--parts", type=Path, default=PARTS, help=f"per-model parts (default {PARTS})")
    parser.add_argument("--out", type=output_file, default=str(OUT), help=f"report (default {OUT})")
    parser.add_argument("--docs", type=Path, default=DOCS, help=f"markdown with a 'shortcut' section (default {DOCS}); "
                        "'-' for none")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--tables-only", action="store_true", help="use only the parts already measured")
    args = parser.parse_args(argv)
    if args.threads < 1 or not 1 <= args.n_images <= 2000:
        parser.error(f"--threads={args.threads} must be >= 1 and --n-images={args.n_images} in 1..2000")
    import torch

    from infsa_viz.evaluation.shortcut import SALIENCE, ModelCueShares
    from infsa_viz.io import write_json
    from infsa_viz.maps import METHODS
    from infsa_viz.progress import progress
    from infsa_viz.stats.shortcut import ModelEntry, shortcut_tables

    torch.set_num_threads(args.threads)
    names = methods()
    every = list(SALIENCE)

    def salience_of(seed: int) -> list[str]:
        return every if args.salience_seeds is None or seed in args.salience_seeds else every[:1]
    folders = [f for f in seed_models(DATA, args.seeds_dir)
               if args.seeds is None or _model_info(f)[2] in args.seeds]
    if not folders:
        parser.error(f"no trained model under {args.seeds_dir / DATA} for --seeds {args.seeds}")
    check_outputs({"--out": args.out, "--docs": args.docs, "--parts": args.parts}, folders)  # no output over a model
    check_outputs({"--out": args.out, "--docs": args.docs}, [args.parts])  # nor over a part
    entries, models = [], []
    for folder in progress(folders, desc="models", unit="model"):
        setting, variant, seed = _model_info(folder)
        key = protocol_key(args.n_images, names, salience_of(seed))
        part = read_part(folder, key, args.parts) if args.tables_only else \
            measure(folder, key, args.n_images, names, salience_of(seed), args.parts)
        if part is None:
            continue
        shares = ModelCueShares.from_dict(part["result"])
        entry = ModelEntry(setting, variant, seed, folder, shares)
        entries.append(entry)
        models.append({"model": folder, "setting": setting, "variant": variant, "seed": seed, "digest": part["digest"],
                       "part": str(args.parts / f"{part['digest'][:24]}.json"), "identical": shares.identical,
                       "mean_cue_share": {s: {m: round(100 * entry.score(m, s), 3) if math.isfinite(entry.score(m, s))
                                              else None for m in names} for s in shares.shares}})
    if not entries:
        parser.error(f"no measured part in {args.parts} for this protocol; run without --tables-only")
    tables = shortcut_tables(entries, roles={m: METHODS[m].role for m in names})
    from infsa_viz.evaluation.shortcut import IDENTICAL_TOLERANCE

    report = {
        "command": "python scripts/shortcut.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "protocol": {
            "question": "does a map's cue share reveal that a model takes the cue as a shortcut?",
            "unit": "a trained model; replicate: a training seed (p10 and p100 models of one variant paired by seed)",
            "models": len(entries), "n_images": args.n_images, "test_split": f"{DATA}: the first {args.n_images} "
            "images of the shared test split (cue on every image, agreeing with the label on about half)",
            "methods": names, "roles": {m: METHODS[m].role for m in names},
            "score": "a model's mean cue share over the images as generated, in points (x 100)",
            **entries[0].shares.protocol,
            "rise": "p100 - p10 score of the same variant and seed; one-sample t-test and 95 % t-interval over seeds",
            "difference": "InfSA rise - softmax rise of the same map, paired by seed; Holm over the distinct explanation "
                          "maps (a group of identical maps counts once; model-ignorant rows, the floor and the "
                          "ceiling are shown but not in the family); detectable: 80 % power at alpha/m",
            "detection": "AUROC of p100 vs p10 scores (ties 1/2) with the Hanley-McNeil score interval; "
                         "false positives: each seed's p10 model called 'reliance detected' at the threshold "
                         "maximising TPR - FPR on the other seeds' models (leave one seed out), Clopper-Pearson "
                         "interval",
            "image_level": "Spearman rho over images between a map's cue share and the cue's evidence, within each "
                           "p100 model; mean and t-interval over models",
            "salience_control": "R2 of the model x salience cell means (mean cue share) by training regime alone "
                                "and by salience alone (after Clark, Oliveira, Wilming & Haufe 2026)",
            "beats_edge": "rise: t-interval of the per-seed (map - edge) rise above 0; detection: AUROC interval "
                          "above the edge map's AUROC; image level: t-interval of per-model (map - edge) rho above 0",
            "identical_tolerance": IDENTICAL_TOLERANCE, "parts": str(args.parts),
            "salience_seeds": list(args.salience_seeds), "salience": {s: SALIENCE[s].description for s in SALIENCE},
        },
        "tables": tables,
        "models": models,
    }
    write_json(Path(args.out), report)
    print(f"wrote {args.out} ({len(entries)} models)", file=sys.stderr)
    if str(args.docs) != "-":
        write_section(args.docs, "shortcut", tables_markdown(report) + "\n\n" + answer_markdown(report))
        print(f"wrote the 'shortcut' section of {args.docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
