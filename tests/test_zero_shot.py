"""CLIP zero-shot targets: a random tiny CLIP saved with a tokenizer built from a small vocabulary (offline),
its prompts encoded by its own text tower, equals transformers' ``logits_per_image``; the text-embedding file
gives the same model without transformers; every default map and the CLI accept a prompt as the target."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz import load_model
from infsa_viz.evaluation import default_methods
from infsa_viz.forward import ForwardRecord
from infsa_viz.maps import METHODS
from infsa_viz.zero_shot import (TextEmbeddings, parse_prompts, read_text_embeddings, save_text_embeddings,
                                 text_embeddings, zero_shot)

transformers = pytest.importorskip("transformers")

PROMPTS = ("a photo of a heron", "a photo of a dog", "a bird")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2 / CLIP's byte → printable character table (Radford et al. 2019)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _tokenizer():
    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    merges = [("h", "e"), ("he", "r"), ("o", "n</w>"), ("her", "on</w>"), ("p", "h"), ("ph", "o")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = len(vocab), len(vocab) + 1
    return transformers.CLIPTokenizer(vocab=vocab, merges=merges)


def build_clip(path):
    """A tiny random CLIP (28² images, patch 14) saved to ``path`` with its tokenizer; returns both (eager)."""
    tokenizer = _tokenizer()
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48)
    config = transformers.CLIPConfig(
        vision_config={**small, "image_size": 28, "patch_size": 14},
        text_config={**small, "vocab_size": len(tokenizer), "max_position_embeddings": 32,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                     "pad_token_id": tokenizer.pad_token_id},
        projection_dim=12, attn_implementation="eager")
    torch.manual_seed(0)
    hf = transformers.CLIPModel(config).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name != "logit_scale":
                p.copy_(torch.randn_like(p) * 0.3)
    hf.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return hf, tokenizer


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip")
    return (path, *build_clip(path))


def _reference(hf, tokenizer, x, prompts=PROMPTS):
    inputs = tokenizer(list(prompts), padding=True, return_tensors="pt")
    with torch.no_grad():
        return hf(pixel_values=x, interpolate_pos_encoding=True, **inputs).logits_per_image


def test_prompts_encoded_by_the_checkpoints_text_tower_equal_clip_logits(clip_dir):
    path, hf, tokenizer = clip_dir
    text = text_embeddings(path, PROMPTS)
    assert text.prompts == PROMPTS and text.embeddings.shape == (3, 12)
    assert text.logit_scale == pytest.approx(float(hf.logit_scale.detach().exp()))
    model = zero_shot(load_model(path), text)
    assert model.config.class_names == PROMPTS and model.config.head == "cosine"
    for size in ((28, 28), (42, 70)):
        x = torch.randn(2, 3, *size)
        with torch.no_grad():
            assert_close(model(x), _reference(hf, tokenizer, x), atol=1e-4, rtol=1e-4)


def test_a_text_embedding_file_needs_no_transformers_and_selects_prompts(clip_dir, tmp_path):
    path, hf, tokenizer = clip_dir
    file = save_text_embeddings(tmp_path / "heron.safetensors", text_embeddings(path, PROMPTS))
    text = read_text_embeddings(file)
    assert text.prompts == PROMPTS
    subset = text_embeddings(file, ["a bird", "a photo of a heron"])
    model = zero_shot(load_model(path), subset)
    x = torch.randn(1, 3, 28, 28)
    with torch.no_grad():
        assert_close(model(x), _reference(hf, tokenizer, x, subset.prompts), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="'a cat'.*are not in"):
        text_embeddings(file, ["a cat"])


def test_every_default_map_accepts_a_prompt_as_the_target(clip_dir):
    path, _, _ = clip_dir
    model = zero_shot(load_model(path), text_embeddings(path, PROMPTS))
    x = torch.randn(1, 3, 42, 70)
    record = ForwardRecord(model, x, target="a photo of a heron")
    assert record.explained.tolist() == [0]
    for name in default_methods():
        result = METHODS[name].attribute(record)
        assert tuple(result.maps.shape) == (1, 3, 5) and bool(torch.isfinite(result.maps).all()), name


def test_refusals(clip_dir, tmp_path):
    path, _, _ = clip_dir
    vision = load_model(path)
    wrong = TextEmbeddings(("a",), torch.ones(1, 5), 100.0, "test")
    with pytest.raises(ValueError, match="width 5 do not fit"):
        zero_shot(vision, wrong)
    with pytest.raises(ValueError, match="distinct"):
        parse_prompts("a|a")
    with pytest.raises(ValueError, match="give the prompts"):
        text_embeddings(path)
    (tmp_path / "x.safetensors").write_bytes(b"\0" * 16)
    with pytest.raises(ValueError, match="not a readable safetensors"):
        read_text_embeddings(tmp_path / "x.safetensors")


def test_cli_explain_with_prompts(clip_dir, tmp_path, capsys):
    import cv2

    from infsa_viz.cli import main

    path, _, _ = clip_dir
    image = tmp_path / "photo.png"
    cv2.imwrite(str(image), (np.random.default_rng(0).random((40, 60, 3)) * 255).astype(np.uint8))
    out = tmp_path / "heron.png"
    code = main(["explain", str(image), "--model", str(path), "--method", "attention", "--prompts",
                 "|".join(PROMPTS), "--target", "a photo of a dog", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert out.is_file()
    settings = json.loads(out.with_suffix(".json").read_text())
    assert "a photo of a dog" in json.dumps(settings)
    file = save_text_embeddings(tmp_path / "t.safetensors", text_embeddings(path, PROMPTS))
    assert main(["explain", str(image), "--model", str(path), "--method", "attention", "--text-embeddings",
                 str(file), "--out", str(tmp_path / "b.png")]) == 0
    assert main(["explain", str(image), "--model", str(path), "--method", "attention", "--prompts", "a|a",
                 "--out", str(tmp_path / "c.png")]) == 2
    assert "distinct" in capsys.readouterr().err
