"""The registry of folder layouts: how a folder of the user's images becomes labelled images.

A data source is either a registered benchmark (:data:`~infsa_viz.data.splits.BENCHMARKS`, generated
test splits) or ``folder:PATH``, a folder whose *layout* is found here (both resolved by
:func:`~infsa_viz.data.sources.data_source`): each :class:`Layout` declares how to recognise a folder of
its kind, how to open it, and what it offers (splits, objects, interventions). :func:`open_image_folder` tries the
registered layouts in order (fallback layouts last), and the CLI's ``--data``, ``evaluate`` and the
app's image sets read it, so a new layout (say a CSV of boxes) is one module calling
:func:`register_layout`, and its test, with no other edit.

The shipped layouts (registered by :mod:`~infsa_viz.data.voc` and :mod:`~infsa_viz.data.folder`)::

    voc             root/JPEGImages/<stem>.jpg + root/Annotations/<stem>.xml   Pascal VOC (labelme's export)
    imagenet-val    root/<stem>.JPEG + root/<stem>.xml                          ImageNet val (official InfSA)
    class-folders   root/<class>/<image>                                        fallback: any other folder
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ..preprocess import Preprocessing
from .splits import LabelledImages

__all__ = ["FOLDER_PREFIX", "LAYOUTS", "ImageFolder", "Layout", "find_layout", "folder_root",
           "open_image_folder", "register_layout"]

#: How a data spec names a folder: ``folder:PATH`` (the CLI) or ``folder:NAME`` (the app's set keys).
FOLDER_PREFIX = "folder:"
Classes = Sequence[str] | Mapping[str, int]


class ImageFolder(Protocol):
    """What an opened folder offers: its class names and its first ``n`` images, labelled.

    Opened without the model's ``classes`` or ``num_classes``, ``labelled(n).labels[i]`` indexes ``classes``.
    """

    classes: Sequence[str]

    def labelled(self, n: int | None = None) -> LabelledImages: ...


@dataclass(frozen=True)
class Layout:
    """A kind of image folder.

    Attributes:
        name: the registry key (``voc``).
        description: one line for people: the files it expects (shown in ``--data``'s help).
        detect: ``detect(root) -> bool``: whether the folder ``root`` has this layout.
        open: ``open(root, *, classes, boxes_dir, num_classes) -> ImageFolder``; ``classes`` are the model's
            class names in output order (or ``{name: index}``) or ``None``, ``boxes_dir`` the CLI's ``--boxes``
            folder or ``None``, ``num_classes`` the model's class count or ``None``. It raises ``ValueError``
            for options it cannot use (e.g. ``--boxes`` for a layout that carries its own boxes).
        fallback: tried after every other layout (the class-folder layout matches any folder). Default ``False``.
        preprocessing: the input normalisation its images need, or ``None`` (default): the model's own applies.
        splits: the splits a folder of this kind has: ``"test"`` (images to explain and score) and, where a
            root of ``train/`` and ``test/`` folders of this kind trains a model, ``"train"``. Default ``("test",)``.
        objects: what its images carry beyond a label: ``"boxes"`` (target boxes) or ``None`` (default).
        interventions: what its images can be changed by (:data:`~infsa_viz.data.sources.INTERVENTIONS`);
            default ``("occlude",)`` (a box filled: any image).
    """

    name: str
    description: str
    detect: Callable[[Path], bool]
    open: Callable[..., ImageFolder]
    fallback: bool = False
    preprocessing: Preprocessing | None = None
    splits: tuple[str, ...] = ("test",)
    objects: Literal["scenes", "boxes"] | None = None
    interventions: tuple[str, ...] = ("occlude",)


#: The folder layouts, by name: filled by :func:`register_layout`. ``--data folder:PATH``, ``evaluate`` and the
#: app's folders read it.
LAYOUTS: dict[str, Layout] = {}


def register_layout(layout: Layout) -> Layout:
    """Add ``layout`` to :data:`LAYOUTS`: ``--data folder:PATH`` and the app's folders open folders of its
    kind with no other edit.

    Raises:
        TypeError: not a :class:`Layout`.
        ValueError: a name already registered.
    """
    if not isinstance(layout, Layout):
        raise TypeError(f"layout has type {type(layout).__name__}; expected a Layout")
    if layout.name in LAYOUTS:
        raise ValueError(f"layout {layout.name!r} is registered twice")
    LAYOUTS[layout.name] = layout
    return layout


def folder_root(spec: str) -> Path | None:
    """The folder a data spec ``folder:PATH`` names, or ``None`` when ``spec`` names no folder."""
    return Path(spec[len(FOLDER_PREFIX):]) if spec.startswith(FOLDER_PREFIX) else None


def find_layout(root: str | os.PathLike[str]) -> Layout:
    """The first registered layout (fallbacks last) that recognises ``root``.

    Raises:
        ValueError: ``root`` is not a folder, or no layout recognises it.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"data folder {str(root)!r} is not a folder")
    for layout in sorted(LAYOUTS.values(), key=lambda layout: layout.fallback):  # stable: registration order
        if layout.detect(root):
            return layout
    raise ValueError(f"data folder {str(root)!r} has none of the layouts {list(LAYOUTS)}")


def open_image_folder(root: str | os.PathLike[str], *, classes: Classes | None = None,
                      boxes_dir: str | os.PathLike[str] | None = None,
                      num_classes: int | None = None) -> ImageFolder:
    """The dataset of ``root``, whichever registered layout it has (:func:`find_layout`).

    Args:
        root: the folder.
        classes: class names in output order, or ``{name: index}`` (needed by layouts that label images by
            class name, e.g. the VOC layouts; class folders named by them get their index). Default ``None``.
        boxes_dir: VOC files for a class-folder layout. Default ``None``.
        num_classes: the model's class count (class folders named by integers are those classes). Default ``None``.

    Raises:
        ValueError: no layout found, or one that cannot use the options given (e.g. needs classes).
    """
    root = Path(root)
    return find_layout(root).open(root, classes=classes, boxes_dir=boxes_dir, num_classes=num_classes)
