"""Unit tests of what keeps the app safe to host and its exports whole: the escaping helper, the
rules of what a link may load, the settings inside every export, the PNG that is what is shown."""

from __future__ import annotations

import io
import os
import json
import struct
import types

import cv2
import numpy as np
import pytest


def test_markdown_escape_leaves_no_markup_and_reads_the_same(app):
    hostile = "**b** <img src=x> ![i](http://e/x.png) :red[r] $x$ [l](u) `c` # h\nnext line"
    text = app.safe.md(hostile, None)
    assert "\n" not in text
    bare = text
    for c in "*<>[]$`_~|&":
        bare = bare.replace("\\" + c, "")
    assert not any(c in bare for c in "*<>[]$`_~|&")  # every markup character escaped (a "#" mid-line is text)
    assert "://" not in text and app.safe.md("1. x") == "1\\. x" and app.safe.md("- x") == "\\- x"
    import re

    assert re.sub(r"\\(.)", r"\1", text) == hostile.replace("\n", " ")  # the reader sees the text itself
    assert app.safe.html("<b>&</b>") == "&lt;b&gt;&amp;&lt;/b&gt;"
    assert app.safe.line("a  fix\n" + "x" * 300) == "a fix " + "x" * 300  # one line, whole: the fix is kept
    assert len(app.safe.line("x" * 300, 120)) == 120 and app.safe.line("x" * 300, 120).endswith("…")
    cut = app.safe.line(app.safe.md("(" * 300, None), 120)[:-1]
    assert (len(cut) - len(cut.rstrip("\\"))) % 2 == 0  # never half an escape before the ellipsis
    assert app.safe.short_paths("'/srv/x/model.safetensors' holds NaN/Inf; /etc") == "'model.safetensors' holds NaN/Inf; etc"


def test_a_link_names_a_model_by_its_roots_short_name_not_the_servers_path(app, tmp_path):
    (tmp_path / "a" / "runs" / "m1").mkdir(parents=True)
    (tmp_path / "b" / "runs" / "m2").mkdir(parents=True)
    roots = os.pathsep.join(str(tmp_path / x / "runs") for x in "ab")
    rules = app.access.access([], {"INFSA_VIZ_MODEL_ROOTS": roots}, address="127.0.0.1")
    assert list(rules.root_names())[1:] == ["runs", "runs-2"]  # the shipped models/ first
    m2 = str((tmp_path / "b" / "runs" / "m2").resolve())
    assert rules.link_name(m2 + "?num_heads=4") == "runs-2/m2?num_heads=4"
    assert rules.check("runs-2/m2?num_heads=4") == m2 + "?num_heads=4"  # a colleague's server maps it back
    assert rules.check("runs/m1") == str((tmp_path / "a" / "runs" / "m1").resolve())
    with pytest.raises(ValueError, match="not a model this server offers"):
        rules.check("runs/../../b")  # a short name does not climb out of its root
    with pytest.raises(ValueError, match="a model is named by a path under a folder"):
        rules.check("elsewhere/m1")


def test_a_link_may_load_only_models_under_the_declared_roots(app, tmp_path):
    inside, outside = tmp_path / "root" / "model", tmp_path / "elsewhere" / "model"
    inside.mkdir(parents=True)
    outside.mkdir(parents=True)
    (tmp_path / "root" / "escape").symlink_to(outside)
    rules = app.access.access([], {"INFSA_VIZ_MODEL_ROOTS": str(tmp_path / "root")}, address="127.0.0.1")
    assert rules.check(str(inside)) == str(inside.resolve())
    assert rules.check(f"{inside}?num_heads=2") == f"{inside.resolve()}?num_heads=2"
    for refused in (str(outside), str(tmp_path / "root" / ".." / "elsewhere" / "model"),
                    str(tmp_path / "root" / "escape"), "/etc", "relative/model", ""):
        with pytest.raises(ValueError) as err:
            rules.check(refused)
        assert "elsewhere" not in str(err.value) and "exist" not in str(err.value)  # says nothing of the disk
    free = app.access.access(["--allow-any-path"], {}, address="127.0.0.1")
    assert free.check(str(outside)) == str(outside.resolve())  # local use: any path
    served = app.access.access(["--allow-any-path"], {}, address="0.0.0.0")
    with pytest.raises(ValueError):
        served.check(str(outside))  # served to others: the flag is not honoured
    assert app.access.loopback("127.0.0.1") and app.access.loopback("::1") and app.access.loopback("localhost")
    assert not app.access.loopback("0.0.0.0") and not app.access.loopback(None)


def _chunks(png: bytes) -> dict[bytes, bytes]:
    out, at = {}, 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        out.setdefault(png[at + 4:at + 8], png[at + 8:at + 8 + length])
        at += 12 + length
    return out


def _view():
    display = np.full((48, 48), 40, np.uint8)
    token_map = np.arange(36, dtype=np.float32).reshape(6, 6)
    return types.SimpleNamespace(display=display, map=token_map, boxes=np.array([[4, 4, 20, 20]]),
                                 negative_boxes=np.array([[30, 30, 44, 44]]))


def test_the_exported_png_is_the_tile_shown_with_its_boxes_and_settings(app):
    from infsa_viz.overlay import colour_scale

    view, display = _view(), app.draw.Display(alpha=0.6, show_boxes=True)
    scale = colour_scale([view.map], "shared", colormap=display.colormap, clip=display.clip)
    shown = cv2.imdecode(np.frombuffer(app.draw.tile_png(view, scale, 0, display), np.uint8), cv2.IMREAD_UNCHANGED)
    (_, tile), = app.exports.overlay_tiles([("m", view)], scale, display=display)
    np.testing.assert_array_equal(tile[:shown.shape[0]], shown[..., ::-1])  # same pixels, colour bar below
    red = tile[30 * 6, 37 * 6]  # the distractor box's edge, zoomed 6x
    assert red[0] > 150 and red[1] < 100  # drawn red, as on the page
    hidden = app.exports.overlay_tiles([("m", view)], scale, display=app.draw.Display(alpha=0.6, show_boxes=False))
    assert not np.array_equal(hidden[0][1], tile)  # boxes off on the page: off in the export

    settings = {"method": "rollout", "head_fusion": "max", "discard_ratio": 0.5, "models": [{"class_names": ["a"]}]}
    png = app.exports.png_with_text(app.exports.grid_png([("m", tile)]), json.dumps(settings))
    assert cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR) is not None  # still a valid PNG
    key, text = _chunks(png)[b"tEXt"].split(b"\0", 1)
    assert key == app.exports.PNG_KEY.encode() and json.loads(text) == settings
    npz = np.load(io.BytesIO(app.exports.maps_npz({"m": view.map}, settings)))  # no pickle needed
    assert json.loads(str(npz["settings"])) == settings and npz["m"].shape == (6, 6)
    assert app.exports.table_csv([{"model": "=cmd", "x": 1.5}]) == "model,x\n'=cmd,1.5\n"
    import pandas as pd

    settings["link"] = "/intervention?models=softmax-vit4&set=folder%3Aphotos"
    text = app.exports.table_csv([{"model": "m", "x": 1.5}], settings)  # the settings and the link above the header
    assert text.splitlines()[0] == f"# link: {settings['link']}"
    assert json.loads(text.splitlines()[1].removeprefix("# settings: ")) == settings
    assert pd.read_csv(io.StringIO(text), comment="#").to_dict("records") == [{"model": "m", "x": 1.5}]


def test_the_network_guard_logs_what_leaves_the_machine(tmp_path):
    """The browser test's server guard (tests/app/netguard) records outside hosts, not this machine."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    log = tmp_path / "net.log"
    code = ("import socket\n"
            "for host in ('outside.invalid', '127.0.0.1', 'localhost'):\n"
            "    try:\n        socket.getaddrinfo(host, 80)\n    except OSError:\n        pass\n")
    guard = Path(__file__).resolve().parent / "netguard"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": str(guard), "INFSA_VIZ_NET_LOG": str(log)})
    assert log.read_text().splitlines() == ["resolve outside.invalid"]
