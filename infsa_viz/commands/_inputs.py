"""Shared CLI inputs: one image (a file or ``BENCHMARK:INDEX``), map selectors and drawing options."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .lists import comma_names


def add_map_options(parser: argparse.ArgumentParser) -> None:
    """``--layer``, ``--head``, ``--gamma``, ``--target`` and the drawing options."""
    from ..overlay import COLORMAPS, SCALES

    parser.add_argument("--layer", type=int, default=None, help="layer for per-layer methods (default: last)")
    parser.add_argument("--head", default=None, help="head index or 'mean' for per-layer methods")
    parser.add_argument("--gamma", type=float, default=None, help="discount for visits/neumann")
    add_target_option(parser, default="predicted", help="class explained by class-explaining maps (default: the "
                                                        "prediction; label needs a BENCHMARK:INDEX image)")
    parser.add_argument("--scale", default="shared", choices=SCALES,
                        help="colour scale across maps (default shared: one scale after dividing each map "
                             "by its absolute mass)")
    parser.add_argument("--alpha", type=float, default=0.5, help="overlay opacity (default 0.5)")
    parser.add_argument("--colormap", default="inferno", choices=COLORMAPS)


def add_target_option(parser: argparse.ArgumentParser, *, default: str, help: str) -> None:
    """``--target``: a :class:`~infsa_viz.targets.Target` (class names are resolved per model)."""
    from ..targets import Target

    def parse(text: str) -> Target | str:
        try:
            return Target.parse(text, name="--target")
        except ValueError as error:
            if text.strip() and not text.strip()[0].isdigit() and not text.strip().startswith("top"):
                return text.strip()  # a class name: looked up in the models' class names (target_for_models)
            raise argparse.ArgumentTypeError(str(error)) from None

    parser.add_argument("--target", type=parse, default=default, metavar="label|predicted|'top K'|CLASS",
                        help=help + "; CLASS is an index or one of the model's class names")


#: What a command's IMAGE argument accepts.
IMAGE_HELP = ("image file, or BENCHMARK:INDEX: image INDEX of a registered benchmark's test split (test:INDEX: the "
              "default benchmark's)")
MODEL_HELP = ("a model directory (ours or a transformers save_pretrained one) or a .safetensors state dict "
              "(timm, torchvision, official InfSA) with options as PATH?num_heads=H&variant=V&convert_to=V")


def add_prompt_options(parser: argparse.ArgumentParser) -> None:
    """``--prompts`` and ``--text-embeddings``: CLIP zero-shot targets (see :mod:`infsa_viz.zero_shot`)."""

    def prompts(text: str) -> tuple[str, ...]:
        from ..zero_shot import parse_prompts

        try:
            return parse_prompts(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parser.add_argument("--prompts", type=prompts, default=None, metavar="'PROMPT|PROMPT…'|@FILE",
                        help="CLIP zero-shot: the classes become these prompts and the logits the image-text "
                             "similarities; encoded by the CLIP model directory's own text tower and tokenizer "
                             "(needs transformers), or picked from --text-embeddings; --target then names a prompt "
                             "(default: the best-matching one)")
    parser.add_argument("--text-embeddings", default=None, metavar="FILE.safetensors",
                        help="CLIP zero-shot from a saved text-embedding file (infsa_viz.zero_shot."
                             "save_text_embeddings; no transformers needed): all its prompts, or those of --prompts")


def load_models(specs: Any, args: argparse.Namespace) -> list[tuple[str, Any]]:
    """``(spec, model)`` for each model spec, with a zero-shot head when ``--prompts`` / ``--text-embeddings``
    were given (:func:`infsa_viz.zero_shot.zero_shot`)."""
    from ..formats import load_model, parse_model_spec

    prompts, file = getattr(args, "prompts", None), getattr(args, "text_embeddings", None)
    models = []
    for spec in specs:
        model = load_model(spec)
        if prompts is not None or file is not None:
            from ..zero_shot import text_embeddings, zero_shot

            model = zero_shot(model, text_embeddings(file if file is not None else parse_model_spec(spec)[0], prompts))
        models.append((spec, model))
    return models


def add_model_list(parser: argparse.ArgumentParser, *, help: str) -> None:
    parser.add_argument("--models", required=True, type=comma_names, metavar="MODEL[,MODEL…]",
                        help=f"{help}; each {MODEL_HELP}")


def add_data_options(parser: argparse.ArgumentParser, *, n_images: int) -> None:
    """``--data``, ``--boxes``, ``--classes`` and ``--n-images``: the images a command reads."""
    from ..data.sources import data_specs_help
    from ..data.splits import DEFAULT_BENCHMARK

    parser.add_argument("--data", default=DEFAULT_BENCHMARK, metavar="BENCHMARK|folder:PATH", help=data_specs_help())
    parser.add_argument("--boxes", default=None, metavar="XMLDIR",
                        help="Pascal-VOC XML boxes for class-folder data (one <stem>.xml per image)")
    parser.add_argument("--classes", default=None, metavar="FILE",
                        help="class-index file for folder data (VOC-labelled folders and class folders): one "
                             "class per line in the model's output order (a synset id first, as in "
                             "LOC_synset_mapping.txt, names the class by it); default: the model's class names. "
                             "Class folders named by class names or indices get those classes")
    parser.add_argument("--n-images", type=int, default=n_images,
                        help=f"the first N images of the data (default {n_images})")


def load_data(args: argparse.Namespace, models: Any = ()) -> Any:
    """The :class:`~infsa_viz.data.LabelledImages` that ``--data`` and its options name.

    ``models`` (``(name, model)`` pairs) provide class names (when ``--classes`` is not given)
    and the class count for folder data; models that name their classes differently are refused.
    """
    from ..data import data_source
    from ..data.voc import read_class_index

    if args.n_images < 1:
        raise ValueError(f"--n-images={args.n_images} must be a positive integer")
    source = data_source(args.data)
    if source.size is not None and args.n_images > source.size:
        raise ValueError(f"--n-images={args.n_images}: the test split holds {source.size} images")
    # a generated source refuses --classes and --boxes (its labels and boxes are exact) before any is read
    classes = read_class_index(args.classes) if args.classes and source.model_labels else args.classes or None
    num_classes = None
    if source.model_labels:  # a folder of class names: the models' classes label it
        if classes is None:
            named = {m.config.class_names for _, m in models if m.config.class_names is not None}
            if len(named) > 1:
                raise ValueError("the models name their classes differently; pass --classes FILE")
            classes = next(iter(named), None)
        counts = [m.config.num_classes for _, m in models]
        num_classes = min(counts) if counts else None
    return source.labelled(args.n_images, classes=classes, boxes_dir=args.boxes, num_classes=num_classes)


def load_input(spec: str) -> Any:
    """``BENCHMARK:INDEX`` (image ``INDEX`` of a registered benchmark's test split, with label and boxes;
    ``test:INDEX`` names the default benchmark's) or an image file."""
    from ..data import BENCHMARKS, LabelledImages, data_source
    from ..data.splits import DEFAULT_BENCHMARK
    from ..images import read_image

    name, colon, text = spec.partition(":")
    if colon and (name == "test" or name in BENCHMARKS):
        source = data_source(DEFAULT_BENCHMARK if name == "test" else name)
        try:
            index = int(text)
        except ValueError:
            raise ValueError(f"IMAGE={spec!r}: expected {name}:INDEX with an integer index") from None
        if not 0 <= index < (source.size or 0):
            raise ValueError(f"IMAGE={spec!r}: index must lie in [0, {source.size})")
        return source.labelled().subset([index])
    return LabelledImages(images=[read_image(spec)], labels=np.array([-1]), boxes=[np.zeros((0, 4), np.int64)],
                          names=[spec], description={"name": "file", "path": spec})
