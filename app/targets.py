"""The class a map explains: the app's one home for the target vocabulary.

``"predicted"`` (each model's prediction), ``"label"`` (the image's label, for models its set
speaks of; else the prediction), ``"top k"`` (each model's k-th most probable class) or a class
index. Parsed from the sidebar and the URL, resolved against one model's probabilities and
validated against its classes here only; switch to ``infsa_viz.targets.Target`` when it lands.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

Target = str | int
#: How many of the most probable classes the class picker offers.
TOP_K = 3
DEFAULT: Target = "predicted"


def choices(num_classes: int, *, labelled: bool) -> list[Target]:
    """The picker's options: the prediction, the label (images with one), top 2 … top
    :data:`TOP_K`, then every class index below ``num_classes``."""
    return ["predicted", *(["label"] if labelled else []),
            *[f"top {k}" for k in range(2, min(TOP_K, num_classes) + 1)], *range(num_classes)]


def parse(text: str) -> Target:
    """A target from its text (the URL): a word of the vocabulary or a class index;
    ``ValueError`` otherwise."""
    text = text.strip()
    if text in ("predicted", "label"):
        return text
    if text.startswith("top ") and text[4:].isdigit() and int(text[4:]) >= 1:
        return f"top {int(text[4:])}"
    if text.isdigit():
        return int(text)
    raise ValueError(f"class={text!r} must be 'predicted', 'label', 'top K' or a class index")


def resolve(target: Target, probabilities: np.ndarray, label: int | None) -> int:
    """The class index ``target`` names for one model on one image (``probabilities``: its
    ``(classes,)`` softmax; ``label``: the image's label for this model, or ``None``).

    Raises:
        ValueError: a class index the model does not have.
    """
    classes = len(probabilities)
    if isinstance(target, int):
        if not 0 <= target < classes:
            raise ValueError(f"class {target} does not exist in this model ({classes} classes)")
        return target
    if target == "label" and label is not None:
        return int(label)
    if target.startswith("top "):
        order = np.argsort(-probabilities, kind="stable")
        return int(order[min(int(target.split()[1]), classes) - 1])
    return int(np.argmax(probabilities))


def describe(target: Target, names: Sequence[Sequence[str]] = ()) -> str:
    """What a target explains, in words; a class index is named by the models' ``names`` (one
    tuple per model; several names when the models name the class differently)."""
    if isinstance(target, str):
        if target.startswith("top "):
            rank = int(target.split()[1])
            return f"the {rank}{'nd' if rank == 2 else 'rd' if rank == 3 else 'th'}-most-probable class"
        return {"predicted": "the prediction", "label": "the true label"}.get(target, target)
    called = list(dict.fromkeys(n[target] for n in names if target < len(n)))
    if not called:
        return f"class {target}"
    return called[0] if len(called) == 1 else f"class {target} ({' / '.join(called[:3])})"
