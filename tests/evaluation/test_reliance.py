"""Measured reliance on the cued benchmarks (infsa_viz/evaluation/reliance.py), with a planted cue reader."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from infsa_viz import ViTConfig
from infsa_viz.data import BENCHMARKS, GLYPHS, LabelledImages, test_split
from infsa_viz.evaluation.interventions import object_importance
from infsa_viz.evaluation.reliance import cue_reliance, top_object_summary, top_objects
from infsa_viz.metrics.evidence import evidence_oracle, evidence_scores

N = 120
SPEC = BENCHMARKS["cued-digits-p100"]


class CueReader(nn.Module):
    """Reads only the cue: logit ``c`` is ``gain`` where glyph ``c`` appears in full ink, else 0.

    Every ink pixel of the glyph must be at the cue's intensity; no glyph lies inside another, so the
    glyph found is the cue (digit strokes do not draw a full glyph at exactly 255 on these images).
    """

    def __init__(self, gain: float = 6.0) -> None:
        super().__init__()
        self.config = ViTConfig(img_size=48, in_chans=1, patch_size=8, num_classes=10,
                                preprocessing=SPEC.preprocessing)
        self.gain = gain
        self.register_buffer("glyphs", torch.tensor(GLYPHS, dtype=torch.float32)[:, None])  # (10, 1, 7, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.config.preprocessing.mean[0], self.config.preprocessing.std[0]
        ink = ((x * std + mean) * 255 >= SPEC.config.cue_intensity - 0.5).float()  # (B, 1, 48, 48)
        hits = F.conv2d(ink, self.glyphs)  # (B, 10, 42, 42): ink pixels of each glyph at each place
        full = (hits >= self.glyphs.sum(dim=(1, 2, 3))[None, :, None, None] - 0.5).flatten(2).any(-1)
        return self.gain * full.float()  # (B, 10)


@pytest.fixture(scope="module")
def data() -> LabelledImages:
    return test_split(N, benchmark="cued-digits-p100")


def test_a_cue_reader_is_decided_by_the_cue_on_every_conflicting_image(data):
    reliance = cue_reliance(CueReader().eval(), data)
    cues = reliance.cue_classes
    np.testing.assert_array_equal(reliance.predicted, cues)
    summary = reliance.summary()
    assert summary["decided_by_cue"] == 1.0 and summary["decided_by_digit"] == 0.0
    assert summary["consistent_accuracy"] == 1.0 and summary["conflicting_accuracy"] == 0.0
    assert summary["conflicting_images"] + summary["consistent_images"] == N
    assert 0.3 < summary["conflicting_images"] / N < 0.7


def test_a_cue_reader_has_all_its_evidence_on_the_cue_and_its_oracle_scores_one(data):
    model = CueReader().eval()
    predicted = cue_reliance(model, data).predicted
    importance = object_importance(model, data, explained=predicted)
    cue = importance.objects.index("cue")
    expected = np.exp(6) / (np.exp(6) + 9) - 0.1  # the cue's class alone at 6, then a uniform output
    np.testing.assert_allclose(importance.prob_drop[:, cue], expected, rtol=1e-9)
    others = np.delete(importance.prob_drop, cue, axis=1)
    np.testing.assert_allclose(others, 0.0, atol=1e-12)
    assert (top_objects(importance) == cue).all()
    summary = top_object_summary(importance)
    assert summary["not_target"] == 1.0 and summary["by_object"]["cue"] == 1.0

    oracle = evidence_oracle(importance.masks, importance.prob_drop, patch_size=1)
    scores = evidence_scores(oracle, importance.masks, importance.prob_drop)
    for figure in ("evidence_spearman", "evidence_mass_accuracy", "top_object_agreement"):
        np.testing.assert_allclose(scores[figure], 1.0, err_msg=figure)
    target_only = importance.masks[:, 0].astype(np.float64)  # a map on the target digit's pixels alone
    floor = evidence_scores(target_only, importance.masks, importance.prob_drop)
    np.testing.assert_array_equal(floor["evidence_mass_accuracy"], 0.0)
    np.testing.assert_array_equal(floor["top_object_agreement"], 0.0)
    assert (floor["evidence_spearman"] < 0).all()


def test_top_objects_skip_absent_objects_and_conditions_must_match(data):
    model = CueReader().eval()
    importance = object_importance(model, data, explained=np.zeros(N, dtype=np.int64))  # class 0: drops <= 0
    top = top_objects(importance)
    present = importance.masks.any(axis=(2, 3))
    assert present[np.arange(N), top].all()
    with pytest.raises(ValueError, match="conditions"):
        top_object_summary(importance, np.array(["consistent"]))


def test_reliance_needs_scenes_and_eval_mode(data):
    plain = LabelledImages(np.asarray(data.images), data.labels, data.boxes)
    with pytest.raises(ValueError, match="scenes"):
        cue_reliance(CueReader().eval(), plain)
    with pytest.raises(ValueError, match="eval mode"):
        cue_reliance(CueReader().train(), data)
