"""The benchmarks of the verdict: one data entry each (``scripts/verdict.py`` reads them).

Adding a benchmark is one :class:`VerdictBenchmark` in :data:`VERDICT_BENCHMARKS`: its name (the
report ``metrics/verdict-<name>.json``), the ``--data`` it is evaluated on, the folder of its
seed models under ``models/seeds/`` and, where models were trained under several settings, the
subfolders that group them. The models of one folder are paired only with each other
(:func:`infsa_viz.stats.verdict.model_group`); every group of a benchmark is evaluated on the
same test images, and Holm runs over the comparisons of all its groups. A setting evaluated on
other test data is a benchmark of its own (another entry). For example::

    VerdictBenchmark("cued-digits", data="cued-digits", seeds="cued-digits", n_images=1000,
                     greedy_images=100, groups=("p10", "p100"), options=("--target", "predicted"))

reads ``models/seeds/cued-digits/p10/<variant>-seed<k>`` and ``.../p100/...``.
:data:`RETIRED` names the benchmarks that left the verdict, with the reason; their reports stay
in ``metrics/`` as historical files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["RETIRED", "VERDICT_BENCHMARKS", "VerdictBenchmark", "seed_models"]


@dataclass(frozen=True)
class VerdictBenchmark:
    """One benchmark of the verdict.

    Attributes:
        name: the report's name (``metrics/verdict-<name>.json``) and the README's label.
        data: the data set the models are evaluated on (``infsa-viz evaluate --data``).
        seeds: the folder under the seeds root holding ``<variant>-seed<k>`` models (or ``groups``).
        n_images: the first N test images scored.
        greedy_images: the first N images of the MoRF-ceiling run (the greedy deletion oracle costs
            about 10x to 38x a MoRF curve).
        groups: subfolders of ``seeds``, one group of models each (e.g. training settings); empty:
            the folder itself is the one group.
        options: further ``infsa-viz evaluate`` options of its protocol (e.g. which class the maps
            explain and which images the call reads).
    """

    name: str
    data: str
    seeds: str
    n_images: int
    greedy_images: int
    groups: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def folders(self, root: Path) -> list[Path]:
        """The group folders under ``root`` (the seeds root)."""
        return [root / self.seeds / g for g in self.groups] or [root / self.seeds]


VERDICT_BENCHMARKS: dict[str, VerdictBenchmark] = {b.name: b for b in (
    VerdictBenchmark("cluttered-digits", data="cluttered-digits", seeds="cluttered-digits", n_images=1000,
                     greedy_images=200),
    # The controlled-reliance benchmark: models trained with a useless cue (p10) and a shortcut cue (p100),
    # one shared test split; the maps explain each model's own prediction and the call reads every image
    # (a conflicting image decided by the cue is the informative one, and "wrong" by the label).
    # 500 images per model since the 12-seed run (72 models x 10 maps: 1,000 images cost about 3 h of
    # 2 cores); the unit of the call is the seed, whose count doubled.
    VerdictBenchmark("cued-digits", data="cued-digits", seeds="cued-digits", n_images=500, greedy_images=100,
                     groups=("p10", "p100"),
                     options=("--target", "predicted", "--select", "all")),
)}

#: Benchmarks that left the verdict, and why (``docs/verdict.md`` says the same).
RETIRED: dict[str, str] = {
    "cluttered-digits-hard": "3 seeds per variant, and the InfSA variants' accuracies trail softmax's by 15.4 and 8.2 "
                             "points; a verdict needs >= 6 seeds per variant with accuracies within 3 points under "
                             "one budget rule (e.g. each trained to a plateau): at least 9 more runs of 25-58 min "
                             "each at one thread, and longer schedules to close the accuracy gaps, which the "
                             "project's training budget does not cover. Its reports "
                             "(metrics/verdict-cluttered-digits-hard*.json) stay as historical files, not read by "
                             "the verdict",
}


def seed_models(benchmark: str, root: Path) -> list[str]:
    """Every ``<variant>-seed<k>`` model folder (with a ``config.json``) of ``benchmark`` under ``root``:
    group by group, variants in registry order, then seeds; ``[]`` for an unknown benchmark."""
    from infsa_viz.model import VARIANTS
    from infsa_viz.stats.verdict import split_seed

    entry = VERDICT_BENCHMARKS.get(benchmark)
    found = []
    for rank, folder in enumerate(entry.folders(root) if entry else []):
        for sub in sorted(folder.iterdir()) if folder.is_dir() else []:
            base, seed = split_seed(sub.name)
            if seed is not None and base in VARIANTS and (sub / "config.json").is_file():
                found.append((rank, VARIANTS.index(base), seed, str(sub)))
    return [path for *_, path in sorted(found)]
