"""Hostile inputs for the bad-input matrix, built once in a folder: models, images, folders, XML.

Every file here is made by code (no data in git), small, and describes exactly one defect.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import torch
from safetensors.torch import save_file

from infsa_viz.model import VisionTransformer, ViTConfig, save_model

TINY = dict(img_size=48, in_chans=1, patch_size=8, embed_dim=16, depth=2, num_heads=2, num_classes=10)


def bomb_png(width: int, height: int, *, depth: int = 8, colour: int = 0) -> bytes:
    """A PNG whose header announces ``width × height`` pixels (8-bit gray by default); the pixels are not in the file."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _png(array: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", array)
    assert ok
    return buf.tobytes()


def _model(root: Path, name: str, variant: str = "pure_infsa") -> Path:
    torch.manual_seed(0)
    return save_model(VisionTransformer(ViTConfig(attention=variant, **TINY)).eval(), root / name)


def _edit_config(directory: Path, **changes) -> None:
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, **changes}))


def _edit_weights(directory: Path, change) -> None:
    from safetensors.torch import load_file

    state = load_file(str(directory / "model.safetensors"))
    change(state)
    save_file(state, str(directory / "model.safetensors"))


def raw_safetensors(path: Path, entries: dict[str, tuple[str, list[int]]], *, data: bytes = b"") -> Path:
    """A safetensors file written by hand: ``name → (dtype, shape)`` with the given data bytes (none
    by default, so only zero-size tensors are honest), offsets laid end to end."""
    header, offset = {}, 0
    sizes = {"F32": 4, "BOOL": 1, "I64": 8}
    for name, (dtype, shape) in entries.items():
        n = sizes[dtype] * int(np.prod(shape))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def _tiny_state(variant: str = "softmax") -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {k: v.contiguous() for k, v in VisionTransformer(ViTConfig(attention=variant, **TINY)).state_dict().items()}


def _timm(root: Path, name: str, change=None) -> Path:
    from infsa_viz.formats.timm import to_timm_state_dict

    torch.manual_seed(0)
    state = {k: v.contiguous() for k, v in to_timm_state_dict(VisionTransformer(ViTConfig(**TINY))).items()}
    if change is not None:
        change(state)
    save_file(state, str(root / f"{name}.safetensors"))
    return root / f"{name}.safetensors"


def _torchvision(root: Path, name: str, change=None, official: bool = False) -> Path:
    """Our tiny model in torchvision's (or, with ``official``, the official InfSA code's) names."""
    blocks = {"norm1": "ln_1", "norm2": "ln_2", "mlp.fc1": "mlp.0", "mlp.fc2": "mlp.3", "attn.proj": "self_attention.out_proj"}
    top = {"cls_token": "class_token", "pos_embed": "encoder.pos_embedding", "patch_embed.proj.bias": "conv_proj.bias",
           "norm.weight": "encoder.ln.weight", "norm.bias": "encoder.ln.bias", "head.weight": "heads.head.weight",
           "head.bias": "heads.head.bias"}
    state = {}
    for key, tensor in _tiny_state("pure_infsa" if official else "softmax").items():
        if key in top:
            state[top[key]] = tensor
        elif key == "patch_embed.proj.weight":
            state["conv_proj.weight"] = tensor.reshape(TINY["embed_dim"], 1, 8, 8).contiguous()
        else:
            _, i, rest = key.split(".", 2)
            layer = f"encoder.layers.encoder_layer_{i}."
            module, _, param = rest.rpartition(".")
            if module in blocks:
                state[layer + blocks[module] + "." + param] = tensor
            elif module == "attn.qkv" and official:
                for part, chunk in zip("qkv", tensor.chunk(3)):
                    state[f"{layer}self_attention.{part}_proj.{param}"] = chunk.contiguous()
            elif module == "attn.qkv":
                state[f"{layer}self_attention.in_proj_{param}"] = tensor
            elif rest == "attn.rho_logit":
                state[layer + "self_attention.rho_logit"] = tensor.reshape(()).contiguous()
    if change is not None:
        change(state)
    save_file(state, str(root / f"{name}.safetensors"))
    return root / f"{name}.safetensors"


HF_CONFIG = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 16,
             "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "image_size": 48,
             "patch_size": 8, "num_channels": 1, "layer_norm_eps": 1e-5, "hidden_act": "gelu", "qkv_bias": True}


def _hf(root: Path, name: str, **config_changes) -> Path:
    """Our tiny softmax model as a transformers ViTForImageClassification save_pretrained directory."""
    from infsa_viz.formats.hf import _LAYER_KEYS, _TOP_KEYS

    layer_keys = {v: k for k, v in _LAYER_KEYS.items()}
    top_keys = {v: k for k, v in _TOP_KEYS.items()}
    state = {}
    for key, tensor in _tiny_state().items():
        module, _, param = key.rpartition(".")
        if key in top_keys:
            state["vit." + top_keys[key]] = tensor
        elif key == "patch_embed.proj.weight":
            state["vit.embeddings.patch_embeddings.projection.weight"] = tensor.reshape(16, 1, 8, 8).contiguous()
        elif module == "head":
            state[f"classifier.{param}"] = tensor
        else:
            _, i, rest = key.split(".", 2)
            sub, _, param = rest.rpartition(".")
            prefix = f"vit.encoder.layer.{i}."
            if sub == "attn.qkv":
                for part, chunk in zip(("query", "key", "value"), tensor.chunk(3)):
                    state[f"{prefix}attention.attention.{part}.{param}"] = chunk.contiguous()
            else:
                state[prefix + layer_keys[sub] + "." + param] = tensor
    folder = root / name
    folder.mkdir()
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({**HF_CONFIG, **config_changes}))
    return folder


VOC = """<annotation><size><width>48</width><height>48</height></size>
<object><name>3</name><bndbox><xmin>5</xmin><ymin>5</ymin><xmax>20</xmax><ymax>20</ymax></bndbox></object>
</annotation>"""
LAUGHS = """<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">
<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<annotation><size><width>&lol3;</width><height>48</height></size></annotation>"""
EXTERNAL = """<?xml version="1.0"?><!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<annotation><size><width>&xxe;</width><height>48</height></size></annotation>"""


def build(root: Path) -> dict[str, Path]:
    """Create every hostile input under ``root``; returns name → path."""
    root.mkdir(parents=True, exist_ok=True)
    p: dict[str, Path] = {"root": root}
    p["model"] = _model(root, "model")
    p["softmax"] = _model(root, "softmax", "softmax")

    def broken(name: str) -> Path:
        p[name] = _model(root, name)
        return p[name]

    (broken("config_malformed") / "config.json").write_text("{not json")
    (broken("config_list") / "config.json").write_text("[1, 2]")
    _edit_config(broken("config_unknown_key"), colour="blue")
    _edit_config(broken("config_negative_depth"), depth=-3)
    _edit_config(broken("config_heads"), num_heads=3)
    _edit_config(broken("config_huge"), depth=100000, embed_dim=4096)
    _edit_config(broken("config_wider"), embed_dim=32)
    (broken("no_weights") / "model.safetensors").unlink()
    (broken("weights_garbage") / "model.safetensors").write_bytes(b"\x00\xff" * 512)
    data = (broken("weights_truncated") / "model.safetensors").read_bytes()
    (p["weights_truncated"] / "model.safetensors").write_bytes(data[: len(data) // 2])
    _edit_weights(broken("weights_nan"), lambda s: s["blocks.0.attn.qkv.weight"].__setitem__((0, 0), float("nan")))
    _edit_weights(broken("weights_missing_tensor"), lambda s: s.pop("head.bias"))
    (broken("card_mismatch") / "card.json").write_text(json.dumps({"weights_sha256": "0" * 64}))
    p["not_a_dir"] = root / "file.txt"
    p["not_a_dir"].write_text("x")
    p["unicode_missing"] = root / "ünïcödé 模型"

    images = root / "images"
    images.mkdir()
    p["png"] = images / "digit.png"
    p["png"].write_bytes(_png(np.full((48, 48), 200, np.uint8)))
    p["empty_png"] = images / "empty.png"
    p["empty_png"].write_bytes(b"")
    p["text_png"] = images / "text.png"
    p["text_png"].write_text("this is not an image")
    p["bomb_png"] = images / "bomb.png"
    p["bomb_png"].write_bytes(bomb_png(25000, 25000))
    ok, buf = cv2.imencode(".jpg", np.full((40, 40, 3), 90, np.uint8))
    p["truncated_jpg"] = images / "cut.jpg"
    p["truncated_jpg"].write_bytes(buf.tobytes()[:40])
    p["gif"] = images / "anim.gif"
    p["gif"].write_bytes(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")

    for name, content in (("folder_empty_image", b""), ("folder_bomb", bomb_png(15000, 15000)),
                          ("folder_garbage", b"garbage")):
        folder = root / name / "3"
        folder.mkdir(parents=True)
        (folder / "a.png").write_bytes(_png(np.zeros((48, 48), np.uint8)))
        (folder / "b.png").write_bytes(content)
        p[name] = root / name
    p["folder_no_classes"] = root / "folder_no_classes"
    p["folder_no_classes"].mkdir()
    good = root / "folder_good" / "3"
    good.mkdir(parents=True)
    (good / "a.png").write_bytes(_png(np.zeros((48, 48), np.uint8)))
    p["folder_good"] = root / "folder_good"
    for name, text in (("xml_laughs", LAUGHS), ("xml_external", EXTERNAL), ("xml_malformed", "<annotation><size>"),
                       ("xml_good", VOC)):
        d = root / name
        d.mkdir()
        (d / "a.xml").write_text(text)
        p[name] = d
    p["timm_garbage"] = root / "timm.safetensors"
    p["timm_garbage"].write_bytes(b"\x01" * 100)
    _second_sweep(root, p)
    p["out"] = root / "out"
    p["out"].mkdir()
    from tests.bad_inputs.sweep3 import third_sweep_fixtures

    third_sweep_fixtures(root, p)
    from tests.bad_inputs.sweep4 import fourth_sweep_fixtures

    fourth_sweep_fixtures(root, p)
    from tests.bad_inputs.sweep_formats import format_sweep_fixtures

    format_sweep_fixtures(root, p)
    return p


def _second_sweep(root: Path, p: dict[str, Path]) -> None:
    """The inputs of the second hostile-input sweep (issue 30)."""
    # Our format: declared-size bombs, non-float weights, configs that crash a naive reader.
    zero = _model(root, "ours_zero_blocks")
    _edit_config(zero, depth=100_000)
    raw_safetensors(zero / "model.safetensors", {f"blocks.{i}.norm1.weight": ("F32", [0]) for i in range(100_000)})
    p["ours_zero_blocks"] = zero
    p["ours_far_block"] = _model(root, "ours_far_block")
    _edit_weights(p["ours_far_block"], lambda s: s.__setitem__("blocks.100000.norm1.weight", torch.ones(16)))
    p["ours_wide"] = _model(root, "ours_wide")
    _edit_config(p["ours_wide"], embed_dim=65536, num_heads=2)
    p["ours_bool"] = _model(root, "ours_bool")
    _edit_weights(p["ours_bool"], lambda s: s.__setitem__("head.bias", s["head.bias"] > 0))
    p["ours_complex"] = _model(root, "ours_complex")
    _edit_weights(p["ours_complex"], lambda s: s.__setitem__("head.bias", s["head.bias"].to(torch.complex64)))
    p["ours_mlp_huge"] = _model(root, "ours_mlp_huge")
    _edit_config(p["ours_mlp_huge"], mlp_ratio=1e300)
    broken = _model(root, "ours_nested")
    (broken / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    p["ours_nested"] = broken
    # timm state dicts.
    p["timm_wide"] = _timm(root, "timm_wide", lambda s: s.__setitem__("patch_embed.proj.weight", torch.ones(65536, 1, 1, 1)))
    p["timm_far_block"] = _timm(root, "timm_far_block",
                                lambda s: s.__setitem__("blocks.100000.norm1.weight", torch.ones(16)))
    p["timm_no_blocks"] = _timm(root, "timm_no_blocks",
                                lambda s: [s.pop(k) for k in [k for k in s if k.startswith("blocks.")]])
    p["timm_missing_mlp"] = _timm(root, "timm_missing_mlp", lambda s: s.pop("blocks.1.mlp.fc2.weight"))
    p["timm_bool"] = _timm(root, "timm_bool", lambda s: s.__setitem__("head.bias", s["head.bias"] > 0))
    p["timm_int"] = _timm(root, "timm_int", lambda s: s.__setitem__("head.bias", s["head.bias"].to(torch.int64)))
    p["timm_lying"] = raw_safetensors(root / "timm_lying.safetensors",
                                      {"patch_embed.proj.weight": ("F32", [100_000, 100_000, 1, 1])}, data=b"\0" * 64)
    # torchvision and official InfSA state dicts.
    p["tv_far_layer"] = _torchvision(root, "tv_far_layer", lambda s: s.__setitem__(
        "encoder.layers.encoder_layer_200000.ln_1.weight", torch.ones(16)))
    p["tv_wide"] = _torchvision(root, "tv_wide", lambda s: s.__setitem__("conv_proj.weight", torch.ones(65536, 1, 1, 1)))
    p["tv_bool"] = _torchvision(root, "tv_bool", lambda s: s.__setitem__("heads.head.bias", s["heads.head.bias"] > 0))
    p["official_wide"] = _torchvision(root, "official_wide", official=True,
                                      change=lambda s: s.__setitem__("conv_proj.weight", torch.ones(65536, 1, 1, 1)))
    p["official_far_layer"] = _torchvision(root, "official_far_layer", official=True, change=lambda s: s.__setitem__(
        "encoder.layers.encoder_layer_200000.self_attention.rho_logit", torch.zeros(())))
    # transformers directories.
    p["hf_good"] = _hf(root, "hf_good")
    p["hf_wide"] = _hf(root, "hf_wide", hidden_size=65536)
    p["hf_deep"] = _hf(root, "hf_deep", num_hidden_layers=100_000)
    p["hf_hidden_zero"] = _hf(root, "hf_hidden_zero", hidden_size=0)
    p["hf_hidden_text"] = _hf(root, "hf_hidden_text", hidden_size="32")
    p["hf_mlp_huge"] = _hf(root, "hf_mlp_huge", intermediate_size=1e300)
    p["hf_eps_text"] = _hf(root, "hf_eps_text", layer_norm_eps="abc")
    for name, processor in (("hf_rescale_zero", {"rescale_factor": 0}), ("hf_mean_null", {"image_mean": None}),
                            ("hf_std_text", {"image_std": ["abc"]})):
        p[name] = _hf(root, name)
        (p[name] / "preprocessor_config.json").write_text(json.dumps(processor))
    p["hf_nested"] = _hf(root, "hf_nested")
    (p["hf_nested"] / "config.json").write_text('{"model_type": ' + "[" * 100_000 + "]" * 100_000 + "}")
    p["hf_processor_loop"] = _hf(root, "hf_processor_loop")
    (p["hf_processor_loop"] / "preprocessor_config.json").symlink_to(p["hf_processor_loop"] / "preprocessor_config.json")
    p["hf_self_index"] = _hf(root, "hf_self_index")
    (p["hf_self_index"] / "model.safetensors").unlink()
    (p["hf_self_index"] / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model.safetensors.index.json"}}))
    p["hf_bool"] = _hf(root, "hf_bool")
    _edit_weights(p["hf_bool"], lambda s: s.__setitem__("classifier.bias", s["classifier.bias"] > 0))
    # Images: a 16-bit RGBA PNG under the pixel limit whose samples decode to more than the byte limit.
    images = root / "images"
    p["rgba16_png"] = images / "rgba16.png"
    p["rgba16_png"].write_bytes(bomb_png(5000, 4000, depth=16, colour=6))
    folder = root / "folder_rgba16" / "3"
    folder.mkdir(parents=True)
    (folder / "a.png").write_bytes(bomb_png(5000, 4000, depth=16, colour=6))
    p["folder_rgba16"] = root / "folder_rgba16"
    # Class folders: indices beyond the model's classes, names that are not the model's.
    for name, classes in (("folder_index_beyond", ("3", "12")), ("folder_names", ("cat", "dog"))):
        for cls in classes:
            (root / name / cls).mkdir(parents=True)
            (root / name / cls / "a.png").write_bytes(_png(np.zeros((48, 48), np.uint8)))
        p[name] = root / name
    p["classes_file"] = root / "classes.txt"
    p["classes_file"].write_text("zero\none\ntwo\n")
    # A user's folder (named as a journal), an existing folder named as an output file.
    p["user_folder"] = root / "user_folder"
    (p["user_folder"] / "sub").mkdir(parents=True)
    for name in ("notes.txt", "results.csv", "sub/thesis.tex"):
        (p["user_folder"] / name).write_text("mine")
    p["dir_out"] = root / "dir_out.json"
    p["dir_out"].mkdir()
    p["timm_gray"] = _timm(root, "timm_gray")
