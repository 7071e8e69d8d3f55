"""Datasets of infsa-viz: packaged MNIST digits, cluttered digits and cued digits (each image also a
:class:`~infsa_viz.data.scenes.Scene` of named objects with masks), bring-your-own image folders in a
registered layout (:data:`LAYOUTS`: class folders, Pascal VOC, ImageNet val); :func:`data_source` resolves
a data spec (a benchmark's name or ``folder:PATH``) to one :class:`DataSource` of either kind.

Box convention everywhere in this package: ``(x0, y0, x1, y1)`` in pixels with ``x1``/``y1``
exclusive, so a box covers ``image[y0:y1, x0:x1]``. Images are decoded ``uint8`` arrays; a
model's preprocessing (:mod:`infsa_viz.preprocess`) turns them into its input.
"""

from .cluttered import (
    PIXEL_MEAN,
    PIXEL_STD,
    ClutteredDigitsConfig,
    ClutteredSample,
    cluttered_epoch,
    generate_cluttered,
    generate_scenes,
)
from .cued import CUE_CONDITIONS, GLYPHS, CuedDigitsConfig, cue_conditions, cued_epoch, generate_cued
from .folder import FolderDataset, parse_voc_boxes
from .layouts import LAYOUTS, Layout, open_image_folder, register_layout
from .mnist import load_mnist_digits
from .scenes import Scene, object_names
from .sources import DataSource, data_source
from .splits import (
    BENCHMARKS,
    DIGITS,
    TEST_SEED,
    TEST_SIZE,
    Benchmark,
    Generator,
    LabelledImages,
    check_benchmark,
    register_benchmark,
    test_split,
)
from .voc import AnnotatedImages, read_class_index  # registers the two VOC layouts

__all__ = [
    "BENCHMARKS",
    "DataSource",
    "data_source",
    "LAYOUTS",
    "AnnotatedImages",
    "read_class_index",
    "Layout",
    "open_image_folder",
    "register_layout",
    "CUE_CONDITIONS",
    "DIGITS",
    "Generator",
    "register_benchmark",
    "GLYPHS",
    "CuedDigitsConfig",
    "cue_conditions",
    "cued_epoch",
    "generate_cued",
    "PIXEL_MEAN",
    "PIXEL_STD",
    "TEST_SEED",
    "TEST_SIZE",
    "Benchmark",
    "ClutteredDigitsConfig",
    "ClutteredSample",
    "FolderDataset",
    "LabelledImages",
    "Scene",
    "check_benchmark",
    "cluttered_epoch",
    "generate_cluttered",
    "generate_scenes",
    "load_mnist_digits",
    "object_names",
    "parse_voc_boxes",
    "test_split",
]
