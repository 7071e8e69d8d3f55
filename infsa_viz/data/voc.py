"""Photos with Pascal-VOC boxes: the VOC layout and the ImageNet-val layout, labelled by class name.

Layouts (registered in :data:`~infsa_viz.data.layouts.LAYOUTS`, found by
:func:`~infsa_viz.data.layouts.open_image_folder`)::

    root/JPEGImages/<stem>.jpg + root/Annotations/<stem>.xml     Pascal VOC (labelme's export too)
    root/<stem>.JPEG + root/<stem>.xml                           ImageNet val as in the official
                                                                 InfSA repository (datasets/imnet)
    root/<class>/<image>                                         class folders (:mod:`~infsa_viz.data.folder`)

Each VOC file names its objects (``person``; synsets such as ``n01440764`` for ImageNet). An
image's label is the class of its largest box whose name is a known class; its target boxes are
every box of that class, its negative boxes the boxes of other objects. Class names come from a
class-index file (:func:`read_class_index`) or from the model (``ViTConfig.class_names``, e.g. a
transformers ``id2label``): the index of a name is the model's output index. Boxes are in the
image's pixels with the package convention (see :mod:`infsa_viz.data.folder`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ..images import check_decoded_budget, read_image
from .folder import IMAGE_EXTENSIONS, _read_voc, _to_int_box
from .layouts import Layout, register_layout
from .splits import LabelledImages

__all__ = ["AnnotatedImages", "read_class_index"]

logger = logging.getLogger(__name__)
_SYNSET = re.compile(r"^(n\d{8})\s")


def read_class_index(path: str | os.PathLike[str]) -> dict[str, int]:
    """A class-index file → ``{name: index}``.

    One class per line, in output order (line 0 is class 0; blank lines are skipped). A line
    that starts with a WordNet synset id and a space (``n01440764 tench, Tinca tinca``, the
    ImageNet ``LOC_synset_mapping.txt`` format) names the class by the synset id; any other line
    is the class name as it is (``potted plant``, labelme's ``class_names.txt``).

    Raises:
        ValueError: an unreadable or empty file, or a name given twice.
    """
    path = Path(path)
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"class index {str(path)!r} cannot be read ({err})") from None
    names = [m[1] if (m := _SYNSET.match(line)) else line for line in lines if line]
    if not names:
        raise ValueError(f"class index {str(path)!r} names no class")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"class index {str(path)!r} names {duplicates[:3]} more than once")
    return {name: i for i, name in enumerate(names)}


class AnnotatedImages:
    """Images each with a VOC file, labelled by the class of their largest known box.

    Args:
        images_dir: folder of images (``.jpg``, ``.jpeg``, ``.png``, ``.bmp``, any case).
        annotations_dir: folder of ``<image stem>.xml`` files (images without one are skipped).
        classes: class names in output order, or a ``{name: index}`` mapping.
        one_based: VOC coordinates are 1-based inclusive (default true).

    Raises:
        ValueError: missing folders, no annotated image, or no classes.
    """

    def __init__(self, images_dir: str | os.PathLike[str], annotations_dir: str | os.PathLike[str], *,
                 classes: Sequence[str] | Mapping[str, int], one_based: bool = True) -> None:
        self.images_dir, self.annotations_dir = Path(images_dir), Path(annotations_dir)
        for name, folder in (("images_dir", self.images_dir), ("annotations_dir", self.annotations_dir)):
            if not folder.is_dir():
                raise ValueError(f"{name}={str(folder)!r} is not a folder")
        self.class_to_idx = dict(classes) if isinstance(classes, Mapping) else {n: i for i, n in enumerate(classes)}
        if not self.class_to_idx:
            raise ValueError("classes is empty; expected the class names in output order")
        #: The class names in label order (a label indexes them).
        self.classes = [name for name, _ in sorted(self.class_to_idx.items(), key=lambda item: item[1])]
        self.one_based = one_based
        self.samples = [(f, self.annotations_dir / f"{f.stem}.xml") for f in sorted(self.images_dir.iterdir())
                        if f.suffix.lower() in IMAGE_EXTENSIONS and not f.name.startswith(".")
                        and (self.annotations_dir / f"{f.stem}.xml").is_file()]
        if not self.samples:
            raise ValueError(f"{self.images_dir} holds no image with a <stem>.xml in {self.annotations_dir}")

    def __len__(self) -> int:
        return len(self.samples)

    def item(self, index: int) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """``(image, label, target boxes (K, 4), negative boxes (M, 4))`` of image ``index``.

        Raises:
            ValueError: naming the file, if the XML is invalid, its size differs from the
                image's, or none of its objects is a known class.
        """
        path, xml = self.samples[index]
        image = read_image(path)
        (width, height), objects = _read_voc(xml, one_based=self.one_based)
        if (width, height) != (image.shape[1], image.shape[0]):
            raise ValueError(f"{xml}: <size> {width}x{height} differs from the image {path} "
                             f"({image.shape[1]}x{image.shape[0]})")
        boxes = [(name, _to_int_box(box, 1.0, 1.0, width, height)) for name, box in objects]
        known = [(name, b) for name, b in boxes if name in self.class_to_idx]
        if not known:
            raise ValueError(f"{xml}: no object of a known class (objects {sorted({n for n, _ in boxes})}; "
                             f"classes e.g. {list(self.class_to_idx)[:3]}); pass a class-index file "
                             "(--classes) whose names are the XML's <name>s")
        name = max(known, key=lambda nb: (nb[1][2] - nb[1][0]) * (nb[1][3] - nb[1][1]))[0]
        target = np.array([b for n, b in boxes if n == name], dtype=np.int64).reshape(-1, 4)
        others = np.array([b for n, b in boxes if n != name], dtype=np.int64).reshape(-1, 4)
        return image, self.class_to_idx[name], target, others

    def labelled(self, n: int | None = None) -> LabelledImages:
        """The first ``n`` images (default all), decoded once, with labels, boxes and negative boxes."""
        count = len(self) if n is None else min(n, len(self))
        check_decoded_budget([path for path, _ in self.samples[:count]])  # before decoding any of them
        items = [self.item(i) for i in range(count)]
        return LabelledImages(
            images=[it[0] for it in items], labels=np.array([it[1] for it in items], dtype=np.int64),
            boxes=[it[2] for it in items], negative_boxes=[it[3] for it in items],
            names=[str(path) for path, _ in self.samples[:count]],
            description={"name": "annotated-folder", "images": str(self.images_dir),
                         "annotations": str(self.annotations_dir), "n_images": count,
                         "labels": "class of the largest box of a known class; its boxes are the targets, "
                                   "other objects' boxes the negatives",
                         "classes": len(self.class_to_idx)},
        )


def _voc_layout(images: str, annotations: str | None) -> Callable[..., AnnotatedImages]:
    """The ``open`` of a VOC layout whose images lie in ``root/images`` and XML files in ``root/annotations``."""

    def open_voc(root: Path, *, classes: Sequence[str] | Mapping[str, int] | None = None,
                 boxes_dir: str | os.PathLike[str] | None = None, num_classes: int | None = None) -> AnnotatedImages:
        if boxes_dir is not None:
            raise ValueError(f"{root} carries its own VOC files; --boxes applies to class-folder data only")
        if classes is None:
            raise ValueError(f"{root}: images labelled by VOC object names need the class names in the model's "
                             "output order: pass a class-index file (--classes FILE), or use a model that "
                             "names its classes (e.g. a transformers id2label)")
        return AnnotatedImages(root / images, root / (annotations or images), classes=classes)

    return open_voc


register_layout(Layout("voc", "a Pascal-VOC root (JPEGImages/ + Annotations/)",
                       lambda root: (root / "JPEGImages").is_dir() and (root / "Annotations").is_dir(),
                       _voc_layout("JPEGImages", "Annotations"), objects="boxes"))
register_layout(Layout("imagenet-val", "images with <stem>.xml beside them (ImageNet val)",
                       lambda root: any(f.suffix.lower() == ".xml" for f in root.iterdir()), _voc_layout(".", None),
                       objects="boxes"))
