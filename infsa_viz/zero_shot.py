"""CLIP zero-shot targets: explain an image *as "a photo of a heron"*.

The target is the image–text similarity CLIP scores (Radford et al. 2021): a vision model with
CLIP's projection gets a cosine head whose rows are the prompts' text embeddings, so its logits are
``logit_scale · cos(image_embed, text_embed_k)`` — transformers' ``CLIPModel`` ``logits_per_image``.
Each prompt is a class of the new model (its class name is the prompt's text), so every map and
metric, and every :class:`~infsa_viz.targets.Target` (``"predicted"``: the best-matching prompt; a
prompt's text or index: that prompt), reads it with no change.

Text embeddings come from:

* the checkpoint's own text tower and tokenizer, when a ``CLIPModel`` ``save_pretrained`` directory
  holds them (:func:`encode_prompts`; this one step imports transformers, safetensors weights only);
* a text-embedding file (:func:`save_text_embeddings` / :func:`read_text_embeddings`: one
  ``.safetensors`` tensor ``text_embeds (K, P)`` with the prompts and CLIP's ``logit_scale`` in its
  metadata), which needs no transformers.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .model.vit import VisionTransformer

__all__ = ["TEXT_EMBEDDINGS_KEY", "TextEmbeddings", "encode_prompts", "parse_prompts", "read_text_embeddings",
           "save_text_embeddings", "text_embeddings", "zero_shot"]

#: The tensor name of a text-embedding file.
TEXT_EMBEDDINGS_KEY = "text_embeds"
_MAX_PROMPTS = 10_000


@dataclass(frozen=True)
class TextEmbeddings:
    """Prompts and their text embeddings.

    Attributes:
        prompts: the prompts, one per row.
        embeddings: ``(K, P)`` float32 text embeddings (CLIP's ``text_embeds``, not normalised).
        logit_scale: the factor of the similarities (CLIP's ``logit_scale.exp()``; 100 for OpenAI's).
        source: where they came from, for messages and the model's ``source``.
    """

    prompts: tuple[str, ...]
    embeddings: Tensor
    logit_scale: float
    source: str

    def __post_init__(self) -> None:
        check_prompts(self.prompts, name="prompts")
        e = self.embeddings
        if not isinstance(e, Tensor) or e.dim() != 2 or e.shape[0] != len(self.prompts) or e.shape[1] < 1:
            raise ValueError(f"{self.source}: text embeddings of shape {tuple(getattr(e, 'shape', ()))} must be "
                             f"(prompts={len(self.prompts)}, P)")
        if not e.is_floating_point() or not bool(torch.isfinite(e).all()) or bool((e.norm(dim=-1) == 0).any()):
            raise ValueError(f"{self.source}: text embeddings must be finite, floating point and non-zero")
        s = self.logit_scale
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < math.inf:
            raise ValueError(f"{self.source}: logit_scale={s!r} must be a positive finite number")


def check_prompts(prompts: Any, *, name: str = "--prompts") -> tuple[str, ...]:
    """``prompts`` as a tuple of distinct non-empty strings; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
        raise ValueError(f"{name}={prompts!r} must be a non-empty list of prompts")
    out = tuple(prompts)
    if not all(isinstance(p, str) and p.strip() for p in out):
        raise ValueError(f"{name}: every prompt must be a non-empty text; got {list(out)[:5]}")
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: prompts must be distinct (each is a class); got {list(out)[:5]}")
    if len(out) > _MAX_PROMPTS:
        raise ValueError(f"{name}: {len(out):,} prompts; expected at most {_MAX_PROMPTS:,}")
    return out


def parse_prompts(text: str) -> tuple[str, ...]:
    """CLI ``--prompts``: ``"a photo of a heron|a photo of a dog"`` or ``@FILE`` (one prompt per line)."""
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"--prompts={text!r}: cannot read {path} ({err})") from None
        return check_prompts([line.strip() for line in lines if line.strip()])
    return check_prompts([p.strip() for p in text.split("|")])


def _logit_scale(directory: Path) -> float:
    """``exp(logit_scale)`` of a CLIP directory's weights (read alone from the safetensors header's file)."""
    from safetensors import SafetensorError, safe_open

    weights = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    if not weights.is_file() and index.is_file():
        shard = json.loads(index.read_text()).get("weight_map", {}).get("logit_scale")
        weights = directory / str(shard) if isinstance(shard, str) and Path(shard).name == shard else weights
    try:
        with safe_open(str(weights), framework="pt") as f:
            value = f.get_tensor("logit_scale") if "logit_scale" in f.keys() else None
    except (OSError, ValueError, SafetensorError) as err:
        raise ValueError(f"{weights}: not a readable safetensors file ({err})") from None
    if value is None or value.numel() != 1:
        raise ValueError(f"{weights}: no scalar 'logit_scale'; expected a whole CLIPModel's weights")
    return float(value.float().exp())


def encode_prompts(directory: str | Path, prompts: Sequence[str]) -> TextEmbeddings:
    """Encode ``prompts`` with a CLIP directory's own tokenizer and text tower (``text_embeds``).

    Needs transformers (this function only) and a ``CLIPModel`` ``save_pretrained`` directory holding
    its tokenizer files; weights are read from safetensors only.

    Raises:
        ValueError: no transformers, not a whole CLIP directory, or no tokenizer in it.
    """
    directory = Path(directory)
    prompts = check_prompts(prompts)
    config = directory / "config.json"
    model_type = json.loads(config.read_text()).get("model_type") if config.is_file() else None
    if model_type != "clip":
        raise ValueError(f"{directory}: model_type={model_type!r}; encoding prompts needs a whole CLIP model's "
                         "directory (model_type 'clip', with its text tower), or pass a text-embedding file")
    try:
        import transformers
    except ImportError:
        raise ValueError("encoding prompts with the checkpoint's text tower needs transformers (pip install "
                         "transformers); or pass a text-embedding .safetensors file") from None
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    except (OSError, ValueError, TypeError) as err:
        raise ValueError(f"{directory}: no tokenizer this CLIP directory holds could be read ({err}); save it "
                         "with tokenizer.save_pretrained, or pass a text-embedding file") from None
    clip, info = transformers.CLIPModel.from_pretrained(str(directory), local_files_only=True, use_safetensors=True,
                                                        output_loading_info=True)
    if info.get("missing_keys") or info.get("mismatched_keys"):
        raise ValueError(f"{directory}: its weights do not fill transformers' CLIPModel (missing "
                         f"{sorted(info.get('missing_keys') or [])[:3]}, mismatched "
                         f"{list(info.get('mismatched_keys') or [])[:3]}); its text tower cannot be used")
    inputs = tokenizer(list(prompts), padding=True, return_tensors="pt")
    with torch.no_grad():
        out = clip.eval().get_text_features(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    embeds = getattr(out, "pooler_output", out)  # transformers 5 returns an output object, 4 a tensor
    return TextEmbeddings(prompts, embeds.float(), _logit_scale(directory), source=str(directory))


def save_text_embeddings(path: str | Path, text: TextEmbeddings) -> Path:
    """Write ``text`` as one ``.safetensors`` file (temp file, then rename); returns the path."""
    from safetensors.torch import save_file

    path = Path(path)
    if path.suffix != ".safetensors":
        raise ValueError(f"path={str(path)!r} must end in .safetensors")
    metadata = {"prompts": json.dumps(list(text.prompts)), "logit_scale": repr(float(text.logit_scale)),
                "source": text.source}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save_file({TEXT_EMBEDDINGS_KEY: text.embeddings.detach().float().contiguous().cpu()}, tmp, metadata=metadata)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def read_text_embeddings(path: str | Path) -> TextEmbeddings:
    """Read a file written by :func:`save_text_embeddings`.

    Raises:
        ValueError: not such a file (the missing tensor or metadata is named).
    """
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="pt") as f:
            keys, metadata = set(f.keys()), f.metadata() or {}
            embeds = f.get_tensor(TEXT_EMBEDDINGS_KEY) if TEXT_EMBEDDINGS_KEY in keys else None
    except (OSError, ValueError, SafetensorError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
    if embeds is None:
        raise ValueError(f"{path}: no tensor {TEXT_EMBEDDINGS_KEY!r}; expected a text-embedding file "
                         "(infsa_viz.zero_shot.save_text_embeddings)")
    try:
        prompts = json.loads(metadata["prompts"])
        scale = float(metadata["logit_scale"])
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"{path}: metadata 'prompts' (a JSON list) and 'logit_scale' (a number) are required; "
                         f"found keys {sorted(metadata)}") from None
    if not isinstance(prompts, list):
        raise ValueError(f"{path}: metadata 'prompts' must be a JSON list of texts")
    return TextEmbeddings(tuple(prompts), embeds.float(), scale, source=str(path))


def text_embeddings(source: str | Path, prompts: Sequence[str] | None = None) -> TextEmbeddings:
    """Text embeddings from a CLIP directory (``prompts`` encoded by its text tower) or a text-embedding
    file (all its prompts, or the ``prompts`` named, in their order).

    Raises:
        ValueError: a directory without ``prompts``, or prompts a file does not hold.
    """
    source = Path(source)
    if source.is_dir():
        if prompts is None:
            raise ValueError(f"{source}: give the prompts to encode with its text tower (CLI: --prompts)")
        return encode_prompts(source, prompts)
    text = read_text_embeddings(source)
    if prompts is None:
        return text
    prompts = check_prompts(prompts)
    missing = [p for p in prompts if p not in text.prompts]
    if missing:
        raise ValueError(f"--prompts {missing[:3]} are not in {source}; it holds {list(text.prompts)[:8]}")
    rows = [text.prompts.index(p) for p in prompts]
    return TextEmbeddings(prompts, text.embeddings[rows], text.logit_scale, text.source)


def zero_shot(model: VisionTransformer, text: TextEmbeddings) -> VisionTransformer:
    """``model`` with a cosine head over ``text``: logits ``(B, K)`` = CLIP's image–text similarities.

    The model's output before the head (the projected image embedding: a CLIP vision model with
    ``visual_projection``) must have the text embeddings' width. The new model shares no tensors with
    ``model``; its class names are the prompts; it is in eval mode.

    Raises:
        ValueError: widths that differ (both named).
    """
    config = model.config
    width = text.embeddings.shape[1]
    if config.feature_dim != width:
        raise ValueError(f"{text.source}: text embeddings of width {width} do not fit {model.origin}, whose image "
                         f"embedding has width {config.feature_dim} (projection_dim={config.projection_dim}); "
                         "expected the vision side of the same CLIP model")
    source = {**(config.source or {}), "zero_shot": {"prompts": len(text.prompts), "text": text.source}}
    new = VisionTransformer(config.replace(num_classes=len(text.prompts), head="cosine", logit_scale=text.logit_scale,
                                           class_names=text.prompts, distillation_head=False, source=source))
    state = {k: v for k, v in model.state_dict().items() if not k.startswith(("head.", "head_dist."))}
    state["head.weight"] = text.embeddings.to(next(model.parameters()).dtype)
    new.load_state_dict(state)
    new.origin = model.origin
    return new.to(next(model.parameters()).device).eval()
