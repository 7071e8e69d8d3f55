"""The class a map explains, as the app's widgets and URL hold it (a text or a class index).

Every parse, resolution and description goes through the library's one
:class:`infsa_viz.targets.Target` (``"predicted"``, ``"label"``, ``"top k"``, a class index);
this module only adapts it to the sidebar (its choices) and to the app's rule for ``"label"``:
an image whose set does not speak of a model's classes has no label for it, and the model's
prediction is explained instead.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from infsa_viz.targets import Target as _Target

#: A target as a widget and the URL hold it: :meth:`infsa_viz.targets.Target.to_json`.
Target = str | int
#: How many of the most probable classes the class picker offers.
TOP_K = 3
DEFAULT: Target = _Target.predicted().to_json()


def choices(num_classes: int, *, labelled: bool) -> list[Target]:
    """The picker's options: the prediction, the label (images with one), top 2 … top
    :data:`TOP_K`, then every class index below ``num_classes``."""
    ranks = [_Target.top(k) for k in range(2, min(TOP_K, num_classes) + 1)]
    words = [_Target.predicted(), *([_Target.label()] if labelled else []), *ranks]
    return [t.to_json() for t in words] + list(range(num_classes))


def parse(text: str) -> Target:
    """A target from its text (the URL); ``ValueError`` naming ``class`` otherwise."""
    return _Target.parse(text, name="class").to_json()


def resolve(target: Target, probabilities: np.ndarray, label: int | None) -> int:
    """The class index ``target`` names for one model on one image (``probabilities``: its
    ``(classes,)`` softmax; ``label``: the image's label for this model, or ``None``: then
    ``"label"`` explains the prediction; a rank past the model's classes is its least probable one).

    Raises:
        ValueError: a class (or rank) the model does not have.
    """
    parsed = _Target.parse(target, name="class")
    if parsed.needs_label and label is None:
        parsed = _Target.predicted()
    if parsed.kind == "rank" and parsed.value > len(probabilities):  # type: ignore[operator]
        parsed = _Target.top(len(probabilities))  # several models: a rank past this one's classes is its last
    return int(parsed.resolve(np.asarray(probabilities)[None], None if label is None else [label], name="class")[0])


def describe(target: Target, names: Sequence[Sequence[str]] = ()) -> str:
    """What a target explains, in words; a class index is named by the models' ``names`` (one
    tuple per model; several names when the models name the class differently)."""
    parsed = _Target.parse(target, name="class")
    if parsed.kind != "class":
        return parsed.describe()
    index = int(parsed.value)  # type: ignore[arg-type]
    called = list(dict.fromkeys(n[index] for n in names if index < len(n)))
    if not called:
        return f"class {index}"
    return called[0] if len(called) == 1 else f"class {index} ({' / '.join(called[:3])})"
