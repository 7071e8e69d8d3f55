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

from infsa_viz.vit import ViTConfig, VisionTransformer, save_model

TINY = dict(img_size=48, in_chans=1, patch_size=8, embed_dim=16, depth=2, num_heads=2, num_classes=10)


def bomb_png(width: int, height: int) -> bytes:
    """A PNG whose header announces ``width × height`` gray pixels; the pixels are not in the file."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
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
    p["out"] = root / "out"
    p["out"].mkdir()
    return p
