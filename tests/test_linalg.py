"""The one home of dense linear algebra: safe at real size on 2 threads, finite or refused, the only caller."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

import infsa_viz
from infsa_viz import linalg
from infsa_viz.model.operators import DenseOperator

F64 = torch.float64

#: Run in a fresh interpreter on 2 threads: batch 2 (and 12 heads) of 197-token systems, every helper and
#: every spectral routine that reaches LAPACK. Before the guard, this printed ``Intel oneMKL ERROR:
#: Parameter 6 was incorrect on entry to SLASWP`` and hung (or failed on invalid pivots).
REAL_SIZE = r"""
import torch
torch.set_num_threads(2)
from infsa_viz import linalg
from infsa_viz.spectral import expected_visits, fundamental_matrix, perron_vector, spectral_radius
g = torch.Generator().manual_seed(0)
for dtype in (torch.float32, torch.float64):
    A = torch.rand(2, 12, 197, 197, generator=g, dtype=dtype)
    A = A / A.sum(-1, keepdim=True)  # row-stochastic: rho = 1
    system = torch.eye(197, dtype=dtype) - 0.9 * A[:, 0]  # (2, 197, 197)
    b = torch.rand(2, 197, 1, generator=g, dtype=dtype)
    x = linalg.solve(system, b)
    assert float((system @ x - b).abs().max()) < 1e-3, "solve"
    inv = linalg.inverse(system)
    assert float((inv @ system - torch.eye(197, dtype=dtype)).abs().max()) < 1e-3, "inverse"
    values, vectors = linalg.eig(A[:, :2])
    assert float((values.abs().amax(-1) - 1).abs().max()) < 1e-5, "eig"
    assert float((linalg.eigvals(A).abs().amax(-1) - 1).abs().max()) < 1e-5, "eigvals"
    visits = expected_visits(A, 0.9, "cls", solver="dense")
    assert float(visits.residual.max()) < 1e-4, "visits"
    assert torch.isfinite(fundamental_matrix(A[:, :3], 0.9)).all(), "fundamental"
    assert float(perron_vector(A[:, :3], method="dense").residual.max()) < 1e-4, "perron"
    assert float((spectral_radius(A[:, :2] * 0.5, method="eig") - 0.5).abs().max()) < 1e-5, "radius"
assert torch.get_num_threads() == 2
print("done")
"""


def test_real_size_batches_on_two_threads_finish_without_a_lapack_message():
    """Batch 2 (and 2 x 12 heads) of 197 tokens on 2 threads, in a subprocess under a time limit: a
    regression fails here instead of hanging the suite."""
    try:
        done = subprocess.run([sys.executable, "-c", REAL_SIZE], capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("dense linear algebra at batch 2, 197 tokens, 2 threads did not finish in 240 s (the oneMKL hang)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "oneMKL ERROR" not in done.stderr + done.stdout
    assert done.stdout.strip().endswith("done")


def test_the_guard_restores_the_callers_threads_and_nests():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with linalg.lapack_threads():
            assert torch.get_num_threads() == 1
            with linalg.lapack_threads():
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), linalg.lapack_threads():
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_concurrent_callers_get_the_same_results():
    g = torch.Generator().manual_seed(1)
    A = torch.eye(40, dtype=F64) + 0.1 * torch.rand(3, 40, 40, generator=g, dtype=F64)
    b = torch.rand(3, 40, 1, generator=g, dtype=F64)
    expected = torch.linalg.solve(A, b)
    found: list[torch.Tensor] = []
    workers = [threading.Thread(target=lambda: found.append(linalg.solve(A, b))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(found) == 4
    for x in found:
        assert_close(x, expected)


def test_solve_inverse_and_eig_match_the_definitions():
    A = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=F64)
    assert_close(linalg.solve(A, torch.tensor([[3.0], [5.0]], dtype=F64)), torch.tensor([[0.8], [1.4]], dtype=F64))
    assert_close(linalg.inverse(A) @ A, torch.eye(2, dtype=F64))
    values, vectors = linalg.eig(A)
    assert_close((A.to(vectors.dtype) @ vectors), vectors * values[None, :])
    expected = torch.tensor([(5 - 5**0.5) / 2, (5 + 5**0.5) / 2], dtype=F64)
    assert_close(linalg.eigvals(A).real.sort().values, expected)


def test_an_exactly_rank_one_matrix_has_its_spectrum():
    a = torch.tensor([[0.5, 0.25, 0.25, 0.0]], dtype=F64)
    values = linalg.eigvals(torch.ones(1, 4, 1, dtype=F64) * a[:, None, :]).abs().sort(descending=True).values
    assert abs(float(values[0, 0]) - 1.0) < 1e-12 and float(values[0, 1:].max()) < 1e-12


@pytest.mark.parametrize("size", [37, 50, 197])
def test_rank_one_row_stochastic_matrices_converge_where_onemkl_geev_fails(size):
    # 1·aᵀ of size 37 / 50: the pinned wheel's oneMKL geev reports "failed to converge"; numpy's is used then.
    g = torch.Generator().manual_seed(size)
    a = torch.rand(2, size, generator=g, dtype=F64)
    a = a / a.sum(-1, keepdim=True)
    A = torch.ones(2, size, 1, dtype=F64) * a[:, None, :]
    values = linalg.eigvals(A, what="rank one").abs().sort(descending=True).values
    assert float((values[:, 0] - 1).abs().max()) < 1e-9 and float(values[:, 1:].max()) < 1e-7
    values, vectors = linalg.eig(A, what="rank one")
    assert_close(A.to(vectors.dtype) @ vectors, vectors * values[:, None, :], atol=1e-9, rtol=0)


@pytest.mark.parametrize("call", ["solve", "inverse", "eig", "eigvals"])
def test_non_finite_matrices_are_refused_with_what_and_where(call):
    A = torch.eye(3, dtype=F64).repeat(2, 1, 1)
    A[1, 0, 2] = float("nan")
    args = (A, torch.ones(2, 3, 1, dtype=F64)) if call == "solve" else (A,)
    with pytest.raises(ValueError, match=r"the thing: the matrix holds NaN or Inf at batch index \[\(1,\)\]"):
        getattr(linalg, call)(*args, what="the thing")


def test_singular_and_overflowing_systems_are_refused():
    with pytest.raises(ValueError, match=r"graph: the matrix is singular at batch index \[\(1,\)\]"):
        linalg.solve(torch.stack([torch.eye(2), torch.zeros(2, 2)]), torch.ones(2, 2, 1), what="graph")
    tiny = torch.tensor([[1e-38, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="the solution holds NaN or Inf.*singular to working precision"):
        linalg.solve(tiny, torch.tensor([[1e30], [1.0]]), what="graph")


def test_visits_and_perron_refuse_non_finite_graphs_naming_the_matrix():
    from infsa_viz.spectral import expected_visits, fundamental_matrix, perron_vector

    A = torch.full((2, 4, 4), 0.2, dtype=F64)
    A[0, 1, 1] = float("inf")
    for solver in ("dense", "neumann", "gmres"):
        with pytest.raises(ValueError, match=r"expected visits of dense A: the row sums of A holds NaN or Inf"):
            expected_visits(A, 0.5, solver=solver)
    with pytest.raises(ValueError, match=r"fundamental matrix of dense A: A holds NaN or Inf at batch index \[\(0,\)\]"):
        fundamental_matrix(A, 0.5)
    with pytest.raises(ValueError, match="NaN or Inf"):
        perron_vector(A)


def test_a_visits_map_names_the_layer_of_a_non_finite_graph(make_config, monkeypatch):
    """The map refuses, naming the layer and the reason: never a figure from a NaN graph."""
    from infsa_viz import VisionTransformer
    from infsa_viz.maps import attribute_images
    from infsa_viz.maps import spectral as spectral_maps

    real = spectral_maps.layer_graph

    def poisoned(record, **kwargs):
        op, discount = real(record, **kwargs)
        A = op.dense().clone()
        A[..., 0, 0] = float("nan")
        return DenseOperator(A), discount

    monkeypatch.setattr(spectral_maps, "layer_graph", poisoned)
    model = VisionTransformer(make_config("pure_infsa")).eval()
    x = torch.randn(2, 1, 16, 16)
    last = model.config.depth - 1
    with pytest.raises(ValueError, match=rf"layer {last} \(pure_infsa\): expected visits of dense A: .*NaN or Inf"):
        attribute_images(model, x, "visits")
    with pytest.raises(ValueError, match=rf"layer {last} \(pure_infsa\): .*NaN or Inf"):
        attribute_images(model, x, "perron")


#: Dense LAPACK entry points that must go through infsa_viz.linalg (norms and sparse/iterative solvers are fine).
_LAPACK = re.compile(r"\b(?:torch\.linalg|np\.linalg|numpy\.linalg|scipy\.linalg)\.(?:solve|solve_ex|inv|inv_ex|lu|"
                     r"lu_factor|lu_factor_ex|lu_solve|eig|eigvals|eigh|eigvalsh|lstsq|cholesky|svd|svdvals|pinv|"
                     r"det|slogdet|matrix_power)\b|torch\.(?:inverse|det|lu|svd|pinverse)\(")


def test_no_module_but_the_helper_calls_dense_lapack():
    root = Path(infsa_viz.__file__).resolve().parent
    callers = [f"{path.relative_to(root.parent)}:{number}" for path in sorted(root.rglob("*.py"))
               if path.name != "linalg.py" or path.parent != root
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if _LAPACK.search(line.split("#")[0])]
    assert not callers, f"dense LAPACK called outside infsa_viz/linalg.py: {callers}"
