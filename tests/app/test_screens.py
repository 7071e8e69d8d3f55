"""What the pages' screenshots at 1280 × 800 showed wrong once (AppTest): one model's overlay at the
whole width on the side-by-side page and at 43 % of it on Methods × models, the token table's values at
mixed precision, and the discount's source written twice ("γ = 0.9 (0.9 (the layer learns no rho))")."""

from __future__ import annotations

import json
import re

from tests.app.test_apptest import _app, _ok


def _one_model(shipped_models, page: str | None = None):
    """The app on the first shipped model alone, at ``page`` (default the side-by-side page), run."""
    at = _app()
    at.query_params.update(models=shipped_models[0].name)
    at.run()
    if page is not None:
        at.switch_page(page).run()
    _ok(at)
    return at


def _image_columns(at) -> list:
    """The main area's columns that hold an image."""
    return [c for c in at.main.columns if any(type(x).__name__ == "Image" for x in c.children.values())]


def test_one_models_overlay_takes_half_the_width(shipped_models):
    overlays = _image_columns(_one_model(shipped_models))
    assert len(overlays) == 1
    assert overlays[0].proto.weight == 0.5  # one of two columns, the second empty


def test_the_discount_is_said_once_and_the_token_table_has_one_precision(shipped_models):
    at = _one_model(shipped_models, "views/attention.py")
    (line,) = [m.value for m in at.markdown if "absorbing-chain reading" in m.value]
    assert re.search(r"γ = [0-9.]+ \((learned rho|the layer learns no rho)\)", line), line
    assert "((" not in line.replace(" ", "") and line.count("(") == line.count(")")
    (table,) = at.dataframe
    config = json.loads(table.proto.columns)  # the column configuration
    assert {k: v["type_config"]["format"] for k, v in config.items() if "type_config" in v} == {
        name: "%.4f" for name in table.value.columns if name != "layer"}


def test_one_models_grid_leaves_a_column_empty(shipped_models):
    rows = _image_columns(_one_model(shipped_models, "views/grid.py"))
    assert rows and all(c.proto.weight <= 1 / 3 for c in rows)  # one of three columns beside the method's
