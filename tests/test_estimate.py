"""Estimates before work (infsa_viz/estimate.py and every method's and metric's ``estimate``)."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
import torch

from infsa_viz.estimate import (
    MAX_FLOPS_PER_IMAGE,
    Estimate,
    Workload,
    available_memory,
    check_estimate,
    largest_batch,
)
from infsa_viz.evaluation import EvalSettings
from infsa_viz.maps import METHODS, attribute_images
from infsa_viz.metrics.registry import METRICS
from infsa_viz.model import ViTConfig, VisionTransformer, save_model


def _model(img_size=48, patch_size=8, **changes) -> VisionTransformer:
    torch.manual_seed(0)
    config = ViTConfig(img_size=img_size, patch_size=patch_size, embed_dim=16, depth=2, num_heads=2, **changes)
    return VisionTransformer(config).eval()


def test_the_workload_of_a_model_and_its_terms():
    work = Workload.of(_model(), torch.zeros(3, 1, 32, 48))
    assert (work.batch, work.tokens, work.layers, work.heads, work.width, work.mlp) == (3, 1 + 4 * 6, 2, 2, 16, 64)
    assert work.pixels == 32 * 48 and work.patches == 24
    assert work.square() == 4 * 3 * 2 * 25**2 and work.square(2, heads=False, itemsize=8) == 2 * 8 * 3 * 25**2
    assert work.capture() == 2 * 4 * 3 * 25 * 2 * 16  # q and k of both layers
    assert Workload.of(torch.nn.Linear(2, 2)) is None
    own = Workload.of(_model(img_size=64))
    assert (own.batch, own.tokens) == (1, 65)


def test_largest_batch_is_the_most_images_that_fit():
    work = Workload.of(_model(), batch=100)
    per_image = lambda w: Estimate(1000.0 * w.batch, "x")  # noqa: E731
    assert largest_batch(per_image, work, budget=25_500) == 25
    assert largest_batch(per_image, work, budget=500) == 0
    assert largest_batch(per_image, work, budget=1e9) == 100


def test_check_estimate_names_the_estimate_the_budget_and_what_lowers_it():
    work = Workload.of(_model(), batch=4)
    with pytest.raises(ValueError) as error:
        check_estimate(Estimate(3e9, "two matrices", lower="solver='gmres'"), work, subject="method 'x'",
                       fewer="--chunk 1", budget=2e9)
    message = str(error.value)
    assert message == ("method 'x' needs about 3 GB for 4 image(s) of 37 tokens, 2 layer(s), 2 head(s) (two "
                       "matrices), over the 2 GB of memory available; lower it with --chunk 1 or solver='gmres'")
    check_estimate(Estimate(1e9, "fits"), work, subject="method 'x'", budget=2e9)  # no error
    with pytest.raises(ValueError, match=r"work L·N³ is 2e\+09, over its bound of 1e\+09; lower it with fewer"):
        check_estimate(Estimate(1.0, "x", work=2e9, limit=1e9, limit_what="work L·N³", lower="fewer tokens"), work,
                       subject="s", budget=1e12)
    with pytest.raises(ValueError, match=r"model passes per image .* over the bound of 1e\+13 per image"):
        check_estimate(Estimate(1.0, "x", forwards=MAX_FLOPS_PER_IMAGE), work, subject="s", budget=1e12)


def test_available_memory_respects_an_address_space_limit():
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
            "from infsa_viz.estimate import available_memory; print(available_memory())")
    found = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 0 <= found < 3 << 30
    assert available_memory() > 0


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_states_an_estimate_that_grows_with_tokens_and_batch(name):
    method = METHODS[name]
    options = method.resolve({})
    small, large = Workload.of(_model()), Workload.of(_model(img_size=96))
    for work in (small, large, small.with_batch(8)):
        found = method.estimate(work, options)
        assert found.bytes > 0 and found.forwards >= 0 and found.what
    assert method.estimate(large, options).bytes > method.estimate(small, options).bytes
    assert method.estimate(small.with_batch(8), options).bytes > method.estimate(small, options).bytes


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_states_an_estimate_that_grows_with_the_images(name):
    settings = EvalSettings().resolved()
    small, large = Workload.of(_model(), batch=2), Workload.of(_model(img_size=96), batch=2)
    assert 0 < METRICS[name].estimate(small, settings).bytes < METRICS[name].estimate(large, settings).bytes
    assert METRICS[name].estimate(small.with_batch(50), settings).bytes > METRICS[name].estimate(small, settings).bytes


def test_dense_matrices_are_counted_as_the_tensors_the_method_holds():
    """rollout at 577 tokens, batch 2: the estimate counts one (B, H, N, N) float32 matrix and four (B, N, N)
    products per layer: at least what a rollout of those matrices allocates (torch's own sizes)."""
    model = _model(patch_size=2)
    work = Workload.of(model, batch=2)
    A = torch.zeros(2, 2, work.tokens, work.tokens)
    held = A.element_size() * A.numel() + 4 * A[:, 0].element_size() * A[:, 0].numel()
    assert METHODS["rollout"].estimate(work, METHODS["rollout"].resolve({})).bytes >= held


@pytest.mark.parametrize("variant", ["softmax", "pure_infsa", "linear_infsa"])
@pytest.mark.parametrize("row", ["cls", "mean"])
def test_attention_reads_its_row_matrix_free_the_same_as_dense(monkeypatch, variant, row):
    import infsa_viz.maps.attention as module

    model = _model(attention=variant)
    x = torch.randn(2, 1, 48, 48)
    dense = attribute_images(model, x, "attention", row=row, head="mean")
    monkeypatch.setattr(module, "DENSE_BUDGET", 0)
    free = attribute_images(model, x, "attention", row=row, head="mean")
    assert "computed" in free.metadata and "computed" not in dense.metadata
    torch.testing.assert_close(free.maps, dense.maps, rtol=1e-5, atol=1e-7)


def test_attention_flow_is_bounded_by_its_max_flow_work():
    with pytest.raises(ValueError, match=r"method 'attention_flow' on 1 image\(s\) of 2,305 tokens.*L·N³ per image"):
        attribute_images(_model(patch_size=1), torch.zeros(1, 1, 48, 48), "attention_flow")


def test_a_valid_2048_px_model_is_refused_up_front_with_the_estimate(tmp_path, capsys):
    """Acceptance (issue 38): rollout of a valid 65,537-token model is refused in under 10 s, before the
    image is read or a forward runs, with the estimate and what lowers it in one line. (16 heads: its
    (H, N, N) matrix alone is 275 GB, more than any test machine holds.)"""
    from infsa_viz.cli import main

    torch.manual_seed(0)
    big = save_model(VisionTransformer(ViTConfig(img_size=2048, patch_size=8, embed_dim=64, depth=2, num_heads=16)),
                     tmp_path / "big")
    start = time.perf_counter()
    code = main(["explain", "--model", str(big), "--method", "rollout", "--out", str(tmp_path / "x.png"), "test:0"])
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err.strip()
    assert code == 2 and seconds < 10, (code, seconds)
    assert len(err.splitlines()) == 1
    assert re.search(r"method 'rollout' needs about [\d,.]+ GB for 1 image\(s\) of 65,537 tokens, 2 layer\(s\), "
                     r"16 head\(s\) .* of memory available; lower it with a smaller input", err), err
    assert not (tmp_path / "x.png").exists()


def test_evaluate_names_the_most_images_per_call_that_fit(tmp_path, monkeypatch):
    """A 1,025-token model under rollout at --chunk 50 needs about 50 times one image: the message names
    the largest --chunk that fits (the budget set to what three images need)."""
    from infsa_viz.evaluation import budget
    from infsa_viz.evaluation.budget import check_evaluation, cli_option

    model = _model(img_size=256)
    per_image = METHODS["rollout"].estimate(Workload.of(model), METHODS["rollout"].resolve({})).bytes
    monkeypatch.setattr(budget, "available_memory", lambda: 3.5 * per_image)
    with pytest.raises(ValueError, match=r"model 'm': method 'rollout' needs about .* for 50 image\(s\) of 1,025 "
                                         r"tokens.* lower it with --chunk 3 \(the most images per call that fit\)"):
        check_evaluation([("m", model)], ["rollout"], EvalSettings(metrics=["box_auc"]), n_images=100,
                         spell=cli_option)
    with pytest.raises(ValueError, match=r"for 1 image\(s\) .* lower it with a smaller input"):
        check_evaluation([("m", model)], ["rollout"], EvalSettings(metrics=["box_auc"], chunk=1), n_images=100,
                         budget=0.5 * per_image)


def test_training_batch_size_is_bounded_by_the_steps_memory():
    from infsa_viz.train import TrainConfig

    with pytest.raises(ValueError, match=r"batch_size=1,000,000,000,000 needs at least .* GB \(one training step's "
                                         r"activations at 37 tokens per image.*expected at most [\d,]+"):
        TrainConfig(batch_size=10**12)
    with pytest.raises(ValueError, match=r"epochs=1,000,000,000,000 is invalid; expected an integer >= 1 and "
                                         r"<= 100,000"):
        TrainConfig(epochs=10**12)
