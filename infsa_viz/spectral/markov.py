"""Absorbing-Markov-chain reading of an attention layer: fundamental matrix and expected visits.

With discount ``γ`` and a non-negative ``A``, ``P = γA`` is read as a walk on tokens: from token
``i`` move to ``j`` with probability ``P_ij`` and stop (be absorbed) with probability
``1 − Σ_j P_ij``. The fundamental matrix (Kemeny & Snell, *Finite Markov Chains*, 1960)

    ``N = (I − γA)⁻¹ = Σ_{t≥0} γᵗ Aᵗ``

has ``N_ij`` = expected number of visits to ``j`` of a walk started at ``i``, counting the start
(``t = 0``) as one visit. Starting from a distribution ``s``, the expected visits are the row
vector ``v = sᵀ N``. InfSA writes the layer series from ``t = 1``:
``Σ_{t≥1} ρᵗ Âᵗ = (I − ρÂ)⁻¹ − I``; every function here takes ``include_start`` to choose:
``True`` gives ``N`` / ``sᵀN``, ``False`` gives ``N − I`` / ``sᵀN − sᵀ``.

The probabilistic reading needs ``Σ_j γA_ij ≤ 1`` for every row (see :func:`absorption_check`);
Frobenius normalisation does not guarantee it. The linear algebra only needs ``γ·ρ(A) < 1``,
which every function checks (:func:`~infsa_viz.spectral.radius.check_gamma`).
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from ..linalg import check_finite, solve
from ..model.operators import SpectralOperator, as_operator, convergence
from .radius import GammaLike, as_gamma, check_gamma

__all__ = [
    "AbsorptionResult",
    "VisitResult",
    "absorption_check",
    "expected_visits",
    "fundamental_matrix",
    "start_vector",
]

Start = Literal["uniform", "cls"] | int | Tensor
Solver = Literal["auto", "dense", "neumann", "gmres"]
SOLVERS = ("auto", "dense", "neumann", "gmres")


def start_vector(
    start: Start, batch_shape: torch.Size, num_tokens: int, *, dtype: torch.dtype,
    device: torch.device | str = "cpu",
) -> Tensor:
    """The start distribution ``s`` as a ``(*batch_shape, N)`` tensor.

    Args:
        start: ``"uniform"`` (``1/N`` each), ``"cls"`` (all mass on token 0, the CLS token), an
            int ``i`` (all mass on token ``i``), or a tensor broadcastable to ``(..., N)``, used
            as given (not renormalised).
    """
    shape = (*batch_shape, num_tokens)
    if isinstance(start, Tensor):
        try:
            return torch.broadcast_to(start.detach().to(dtype=dtype, device=device), shape)
        except RuntimeError:
            raise ValueError(
                f"start has shape {tuple(start.shape)}; expected a vector broadcastable to {shape}"
            ) from None
    if start == "uniform":
        return torch.full(shape, 1.0 / num_tokens, dtype=dtype, device=device)
    if start == "cls":
        start = 0
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < num_tokens:
        raise ValueError(
            f"start={start!r} must be 'uniform', 'cls', a token index in [0, {num_tokens}) or a tensor"
        )
    s = torch.zeros(shape, dtype=dtype, device=device)
    s[..., start] = 1.0
    return s


def _start_label(start: Start) -> str:
    return "tensor" if isinstance(start, Tensor) else str(start)


def fundamental_matrix(
    A: SpectralOperator | Tensor, gamma: GammaLike, *, include_start: bool = True
) -> Tensor:
    """``N = (I − γA)⁻¹`` by a batched LU solve against ``I`` (:func:`infsa_viz.linalg.solve`), never an explicit inverse.

    Args:
        A: matrices ``(..., N, N)`` (e.g. ``(B, H, N, N)``) or an operator (made dense).
        gamma: discount, a float or a tensor broadcastable to the leading dims (e.g. ``(H,)``).
        include_start: ``True`` → ``N = Σ_{t≥0} γᵗAᵗ``; ``False`` → ``N − I = Σ_{t≥1} γᵗAᵗ``.

    Returns:
        ``(..., N, N)``; ``N_ij`` = expected visits to ``j`` starting from ``i``.

    Raises:
        ValueError: if ``γ·ρ(A) ≥ 1`` (see :func:`~infsa_viz.spectral.radius.check_gamma`), or if
            ``A`` or the solution holds NaN/Inf (the message says which).

    Example:
        >>> fundamental_matrix(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), 0.5)
        tensor([[1.3333, 0.6667],
                [0.6667, 1.3333]])
    """
    op = as_operator(A)
    M = op.dense()  # (..., N, N)
    check_finite(M, "A", f"fundamental matrix of {op.description}")
    g = check_gamma(op, gamma)  # (...)
    eye = torch.eye(op.num_tokens, dtype=M.dtype, device=M.device)
    system = eye - g[..., None, None] * M  # (..., N, N)
    fundamental = solve(system, eye.expand_as(system), what=f"fundamental matrix (I - gamma A)^-1 of {op.description}")
    return fundamental if include_start else fundamental - eye


@dataclass
class VisitResult:
    """Expected visits ``v = sᵀ(I − γA)⁻¹`` (or ``− sᵀ`` without the start) and how they were solved.

    Attributes:
        visits: ``(*batch, N)``; ``visits[..., j]`` = expected visits to token ``j``.
        gamma: ``(*batch)`` discount used.
        matrix: which matrix ``A`` was (operator description).
        start: the start distribution (``"uniform"``, ``"cls"``, an index or ``"tensor"``).
        include_start: whether the ``t = 0`` visit is counted.
        solver: ``"dense"`` (LU solve), ``"neumann"`` or ``"gmres"``.
        iterations: iterations used (0 for dense).
        residual: ``(*batch)`` relative residual ``‖s − v₀(I − γA)‖₂ / ‖s‖₂`` of the full-series
            vector ``v₀ = sᵀN``, recomputed after solving.
        tol: effective stopping tolerance of an iterative solver (``None`` for dense).
    """

    visits: Tensor
    gamma: Tensor
    matrix: str
    start: str
    include_start: bool
    solver: str
    iterations: int
    residual: Tensor
    tol: float | None

    def metadata(self) -> dict[str, Any]:
        """JSON-friendly summary (no tensors except γ as a list)."""
        return {
            "quantity": "expected visits s^T (I - gamma A)^-1" + ("" if self.include_start else " - s^T"),
            "matrix": self.matrix,
            "side": "left (row vector s^T N)",
            "gamma": self.gamma.flatten().tolist() if self.gamma.numel() > 1 else float(self.gamma),
            "start": self.start,
            "include_start": self.include_start,
            "solver": self.solver,
            **convergence(self.iterations, self.residual, self.tol),
        }

    def describe(self) -> str:
        m = self.metadata()
        return (
            f"expected visits from start={m['start']} (include_start={m['include_start']}) on "
            f"{m['matrix']} with gamma={m['gamma']}; solver={m['solver']}, "
            f"{m['iterations']} iterations, max relative residual {m['max_residual']:.2e}"
        )


def _neumann(op: SpectralOperator, g: Tensor, s: Tensor, *, tol: float, max_iter: int) -> tuple[Tensor, int]:
    """Partial sums ``Σ_{t≤T} s(γA)ᵗ``; the residual of a partial sum is its next term."""
    s_norm = torch.linalg.vector_norm(s, dim=-1).clamp_min(torch.finfo(s.dtype).tiny)
    term, v = s, s.clone()
    for iteration in range(1, max_iter + 1):
        term = g.unsqueeze(-1) * op.rmatvec(term)  # (..., N)
        v = v + term
        if (torch.linalg.vector_norm(term, dim=-1) <= tol * s_norm).all():
            return v, iteration
    return v, max_iter


def _gmres(op: SpectralOperator, g: Tensor, s: Tensor, *, tol: float, max_iter: int) -> tuple[Tensor, int]:
    """scipy GMRES on the whole batch at once (a block-diagonal system of size batch·N)."""
    from scipy.sparse.linalg import LinearOperator, gmres

    shape = s.shape
    size = s.numel()

    def apply(y: np.ndarray) -> np.ndarray:
        v = torch.from_numpy(np.ascontiguousarray(y, dtype=np.float64).reshape(shape)).to(op.dtype)
        out = v - g.unsqueeze(-1) * op.rmatvec(v)  # vᵀ(I − γA)
        return out.double().reshape(-1).numpy()

    system = LinearOperator((size, size), matvec=apply, dtype=np.float64)
    count = [0]

    def callback(_: Any) -> None:
        count[0] += 1

    b = s.double().reshape(-1).numpy()
    # scipy >= 1.12 names the relative tolerance rtol (tol before; removed in 1.14).
    tolerance = {"rtol" if "rtol" in inspect.signature(gmres).parameters else "tol": tol}
    x, _info = gmres(system, b, x0=b.copy(), atol=0.0, restart=min(50, size),
                     maxiter=max(1, math.ceil(max_iter / 50)), callback=callback, callback_type="pr_norm",
                     **tolerance)
    return torch.from_numpy(x).reshape(shape).to(op.dtype), count[0]


def expected_visits(
    A: SpectralOperator | Tensor,
    gamma: GammaLike,
    start: Start = "uniform",
    *,
    include_start: bool = True,
    solver: Solver = "auto",
    tol: float = 1e-10,
    max_iter: int = 1000,
    dense_limit: int = 2048,
) -> VisitResult:
    """Expected visits ``v = sᵀ(I − γA)⁻¹`` without forming ``N = (I − γA)⁻¹``.

    ``v`` solves ``(I − γAᵀ) v = s``: entry ``j`` is the expected number of visits to token ``j``
    of the walk ``P = γA`` started from ``s`` (``N_ij`` = visits to ``j`` from ``i``, so
    ``v = sᵀN``).

    Args:
        A: matrices ``(..., N, N)`` or an operator (:class:`InfSAOperator` for large N).
        gamma: discount, float or tensor broadcastable to the batch dims (e.g. per head ``(H,)``).
        start: ``"uniform"`` (default), ``"cls"`` (token 0), a token index, or a tensor ``(..., N)``.
        include_start: count the ``t = 0`` visit (default ``True``; ``False`` returns
            ``sᵀ((I − γA)⁻¹ − I)``, InfSA's ``Σ_{t≥1}`` series).
        solver: ``"dense"`` (LU solve of the ``N × N`` system), ``"neumann"`` (matrix-free
            Richardson/Neumann iteration ``v ← s + γ vA``; converges at rate ``γ·ρ(A)``),
            ``"gmres"`` (scipy GMRES on the whole batch, matrix-free, restart 50; usually far fewer
            products than neumann, e.g. 3 vs 15 for InfSA at N = 16,384 with γ = 0.5), or
            ``"auto"`` (default: dense when ``N ≤ dense_limit`` and the batch of dense matrices
            holds at most 2²⁵ numbers, else gmres).
        tol: iterative solvers stop when the relative residual is ``≤ tol`` (raised to ten times
            the machine epsilon of the operator's dtype, ~1.2e-6 in float32).
        max_iter: most operator products of an iterative solver; a ``RuntimeWarning`` says when
            it stopped before reaching ``tol``.
        dense_limit: largest ``N`` solved densely by ``"auto"`` (default 2048).

    Returns:
        :class:`VisitResult` with ``visits (*batch, N)``, the solver, iterations and residuals.

    Raises:
        ValueError: on invalid options, if ``γ·ρ(A) ≥ 1``, or if ``A`` or the visits hold NaN/Inf
            (the message names the matrix, the solver and the batch index).
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver={solver!r} must be one of {list(SOLVERS)}")
    if not tol > 0 or isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"tol={tol!r} must be > 0 and max_iter={max_iter!r} a positive integer")
    op = as_operator(A)
    what = f"expected visits of {op.description}"
    check_finite(op.row_sums(), "the row sums of A", what, vector=True)  # NaN/Inf anywhere in A shows here
    g = check_gamma(op, gamma)  # (...)
    s = start_vector(start, op.batch_shape, op.num_tokens, dtype=op.dtype, device=op.device)
    if solver == "auto":
        solver = "dense" if op.fits_dense(dense_limit) else "gmres"
    tol = max(tol, 10 * torch.finfo(op.dtype).eps)  # float32 cannot go below ~1e-6
    iterations = 0
    if solver == "dense":
        M = op.dense()  # (..., N, N)
        eye = torch.eye(op.num_tokens, dtype=M.dtype, device=M.device)
        system = eye - g[..., None, None] * M.transpose(-2, -1)  # (I − γA)ᵀ
        v = solve(system, s.unsqueeze(-1), what=what).squeeze(-1)  # (..., N)
    elif solver == "neumann":
        v, iterations = _neumann(op, g, s, tol=tol, max_iter=max_iter)
    else:
        v, iterations = _gmres(op, g, s, tol=tol, max_iter=max_iter)
    check_finite(v, "the visits", f"{what} ({solver} solver)", vector=True)
    residual = s - v + g.unsqueeze(-1) * op.rmatvec(v)  # s − v(I − γA)
    relative = torch.linalg.vector_norm(residual, dim=-1) / torch.linalg.vector_norm(s, dim=-1).clamp_min(
        torch.finfo(s.dtype).tiny
    )
    if solver != "dense" and (relative > 10 * tol).any():
        warnings.warn(
            f"expected_visits: {solver} stopped after {iterations} iterations with relative residual "
            f"{float(relative.max()):.3g} > tol={tol}; raise max_iter or use solver='gmres'",
            RuntimeWarning, stacklevel=2,
        )
    return VisitResult(
        visits=v if include_start else v - s,
        gamma=g,
        matrix=op.description,
        start=_start_label(start),
        include_start=include_start,
        solver=solver,
        iterations=iterations,
        residual=relative,
        tol=None if solver == "dense" else tol,
    )


@dataclass
class AbsorptionResult:
    """Per-row absorption probabilities of ``P = γA``; the Markov reading needs them ``≥ 0``.

    Attributes:
        absorption: ``(*batch, N)`` ``1 − γ Σ_j A_ij`` for each row (token) ``i``.
        valid_share: ``(*batch)`` share of rows with absorption ``≥ −atol``.
        gamma: ``(*batch)`` discount used.
        matrix: which matrix ``A`` was.
    """

    absorption: Tensor
    valid_share: Tensor
    gamma: Tensor
    matrix: str

    @property
    def all_valid(self) -> bool:
        """Whether every row of every matrix is a valid sub-stochastic row."""
        return bool((self.valid_share == 1).all())

    def describe(self) -> str:
        return (
            f"absorption 1 − γΣ_j A_ij on {self.matrix}: {float(self.valid_share.mean()):.1%} of rows "
            f"valid (min absorption {float(self.absorption.min()):.4g})"
        )


def absorption_check(
    A: SpectralOperator | Tensor, gamma: GammaLike, *, atol: float = 0.0
) -> AbsorptionResult:
    """Absorption probability ``1 − γ Σ_j A_ij`` per row and the share of valid rows.

    Rows with a negative value have ``Σ_j P_ij > 1``: there the absorbing-chain reading of
    ``(I − γA)⁻¹`` as visit counts does not hold (the matrix may still be invertible).

    Args:
        A: non-negative matrices ``(..., N, N)`` or an operator (one matrix-free product).
        gamma: discount, float or tensor broadcastable to the batch dims.
        atol: rows with absorption ``≥ −atol`` count as valid (default 0).

    Returns:
        :class:`AbsorptionResult`.
    """
    op = as_operator(A)
    g = as_gamma(gamma, op.batch_shape, dtype=op.dtype, device=op.device)
    absorption = 1.0 - g.unsqueeze(-1) * op.row_sums()  # (..., N)
    valid = (absorption >= -atol).to(op.dtype).mean(-1)  # (...)
    return AbsorptionResult(absorption=absorption, valid_share=valid, gamma=g, matrix=op.description)
