"""The class a map explains, as the app's widgets and URL hold it (a text or a class index).

Every parse goes through the library's one :class:`infsa_viz.targets.Target` (``"predicted"``,
``"label"``, ``"top k"``, a class index), and every resolution through the image's
:class:`infsa_viz.forward.ForwardRecord` (:func:`compute.class_index`): an image without a label
for a model has its prediction explained, the library's one rule for an unknown label. This module
only adapts the target to the sidebar: its choices, its text in the URL and its words.
"""

from __future__ import annotations

from typing import Sequence

from infsa_viz.targets import Target as _Target

#: A target as a widget and the URL hold it: :meth:`infsa_viz.targets.Target.to_json`.
Target = str | int
#: How many of the most probable classes the class picker offers.
TOP_K = 3
DEFAULT: Target = _Target.predicted().to_json()


def choices(num_classes: int, *, labelled: bool, fewest: int | None = None) -> list[Target]:
    """The picker's options: the prediction, the label (images with one), top 2 … top
    :data:`TOP_K` (at most the ``fewest`` classes a selected model has), then every class index
    below ``num_classes``."""
    ranks = [_Target.top(k) for k in range(2, min(TOP_K, num_classes, fewest or num_classes) + 1)]
    words = [_Target.predicted(), *([_Target.label()] if labelled else []), *ranks]
    return [t.to_json() for t in words] + list(range(num_classes))


def parse(text: str) -> Target:
    """A target from its text (the URL); ``ValueError`` naming ``class`` otherwise."""
    return _Target.parse(text, name="class").to_json()


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
