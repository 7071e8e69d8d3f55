"""Dense linear algebra safe on the pinned torch wheel: the one home of every solve, inverse and eigenproblem.

Every dense solve (visits, the fundamental matrix), inverse and eigenvalue call of the library goes
through this module; nothing else calls ``torch.linalg.solve`` / ``lu_factor`` / ``inv`` / ``eig`` /
``eigvals`` or ``numpy.linalg.eig``. Each call runs batched LAPACK (oneMKL in the CPU wheel) on **one
intra-op thread** (:func:`lapack_threads`) and refuses non-finite inputs and results with what was
being solved and why (:class:`ValueError`).

Why one thread (measured on the pinned ``torch==2.13.0+cpu``, oneMKL 2024.2, 2 CPU cores shared with
two one-thread training jobs; each case in a subprocess under a time limit;
``python -m benchmarks linalg`` reruns the matrix and writes ``metrics/bench-linalg.json``):

* batched ``torch.linalg.solve``, ``lu_factor`` and ``inv`` of ``B ≥ 2`` matrices of size
  ``N ≥ 150`` with 2 threads print ``Intel oneMKL ERROR: Parameter 6 was incorrect on entry to
  SLASWP`` and then hang (N = 150: no return within 20–30 s, every try) or fail
  (N = 159, 160, 161, 197: ``RuntimeError: Pivots given to lu_solve must all be greater or equal
  to 1``); float64 the same; ``lu_factor`` alone *returns* garbage pivots after the message.
  ``N ≤ 149``, ``B = 1``, 1 thread, a loop over the batch, ``lstsq``, ``eig``/``eigvals`` and
  numpy's LAPACK (OpenBLAS) do not fail;
* one thread is also the fastest route for these sizes (median of 5, ms, float64, 2 threads
  otherwise): solve ``B = 2, N = 197``: batched on one thread 0.7, a loop on 2 threads 56
  (``B = 12``: 9.0 vs 8.5); ``eigvals`` ``B = 12, N = 197``: one thread 142, batched on 2 threads
  4,412, numpy 4,342; ``eig`` ``B = 12, N = 197``: one thread 395, numpy 2,973. Switching the
  thread count costs under 1 µs.

So the guard is a thread guard, not a loop: the batch stays one LAPACK call, on one thread, then
the caller's thread count comes back. It holds a process-wide lock, so concurrent callers (the
app's sessions) neither interleave their restores nor run LAPACK on two threads; a forward pass of
another thread that starts inside the window runs on one thread (slower, never wrong). On a GPU
tensor no guard is needed and none is taken.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import Tensor

__all__ = ["check_finite", "eig", "eigvals", "inverse", "lapack_threads", "lstsq", "solve"]

_LOCK = threading.RLock()


@contextmanager
def lapack_threads(device: torch.device | str = "cpu") -> Iterator[None]:
    """Run the block on one intra-op thread (CPU), restoring the caller's count afterwards.

    Example:
        >>> with lapack_threads():
        ...     x = torch.linalg.solve(torch.eye(2), torch.ones(2))
    """
    if torch.device(device).type != "cpu":
        yield
        return
    with _LOCK:
        before = torch.get_num_threads()
        if before == 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def check_finite(x: Tensor, name: str, what: str, *, vector: bool = False,
                 expected: str = "expected finite values") -> None:
    """Refuse ``x`` (``(..., N, N)`` matrices, or ``(..., N)`` vectors with ``vector=True``) holding NaN/Inf.

    Raises:
        ValueError: ``"{what}: {name} holds NaN or Inf at batch index [...] (k of n); {expected}"``.
    """
    dims = 1 if vector else 2
    finite = torch.isfinite(x).flatten(-dims).all(-1) if x.dim() >= dims else torch.isfinite(x)
    if not bool(finite.all()):
        where = [tuple(i) for i in (~finite).nonzero().tolist()][:3]
        raise ValueError(f"{what}: {name} holds NaN or Inf at batch index {where} "
                         f"({int((~finite).sum())} of {finite.numel()}); {expected}")


def _square(A: Tensor, what: str) -> None:
    if not isinstance(A, Tensor) or A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{what}: the matrix has shape {tuple(getattr(A, 'shape', ()))}; expected square "
                         "matrices (..., N, N)")


def solve(A: Tensor, B: Tensor, *, what: str = "solve") -> Tensor:
    """``X`` with ``A X = B``, batched over the leading dims (LU with partial pivoting, one thread).

    Args:
        A: ``(..., N, N)`` matrices.
        B: ``(..., N, K)`` right-hand sides (broadcast as ``torch.linalg.solve`` does).
        what: what is being solved, for the messages (``"visits at layer 11"``).

    Returns:
        ``(..., N, K)``.

    Raises:
        ValueError: ``A`` or ``B`` holds NaN/Inf, ``A`` is singular, or the solution is not finite
            (``A`` singular to working precision); the message names ``what`` and the batch index.
    """
    _square(A, what)
    check_finite(A, "the matrix", what)
    check_finite(B, "the right-hand side", what)
    with lapack_threads(A.device):
        X, info = torch.linalg.solve_ex(A, B)
    if bool((info != 0).any()):
        where = [tuple(i) for i in (info != 0).nonzero().tolist()][:3]
        raise ValueError(f"{what}: the matrix is singular at batch index {where} (LU pivot exactly 0); "
                         "expected an invertible system")
    check_finite(X, "the solution", what, expected="the matrix is singular to working precision")
    return X


def inverse(A: Tensor, *, what: str = "inverse") -> Tensor:
    """``A⁻¹`` by :func:`solve` against the identity (refusals as there)."""
    _square(A, what)
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return solve(A, eye.expand_as(A), what=what)


def lstsq(A: Tensor, B: Tensor, *, what: str = "least squares") -> Tensor:
    """``X`` minimising ``‖A X − B‖_F``, batched over the leading dims (LAPACK ``gelsy``, one thread).

    Args:
        A: ``(..., M, N)``.
        B: ``(..., M, K)``.
        what: what is being fitted, for the messages.

    Raises:
        ValueError: ``A`` or ``B`` holds NaN/Inf (the message names ``what``).
    """
    check_finite(A, "the matrix", what)
    check_finite(B, "the right-hand side", what)
    with lapack_threads(A.device):
        return torch.linalg.lstsq(A, B).solution


def _geev(A: Tensor, what: str, *, vectors: bool) -> tuple[Tensor, Tensor | None]:
    """LAPACK ``geev`` of ``A`` in float64 on one thread: oneMKL first, numpy's OpenBLAS if it fails.

    oneMKL 2024.2's ``geev`` (the pinned wheel) fails to converge on some matrices OpenBLAS solves:
    measured, ``1·aᵀ`` (rank one, a row-stochastic ``a``) of size 37 or 50 fails every time (error
    code 14/16) while sizes 197 and numpy succeed. On a CPU tensor a failure is retried with numpy's
    ``geev``; only when both fail is the matrix refused.
    """
    A64 = A.double()
    with lapack_threads(A.device):
        try:
            if vectors:
                return torch.linalg.eig(A64)
            return torch.linalg.eigvals(A64), None
        except torch.linalg.LinAlgError as error:  # geev's QR iteration failed to converge
            failure = str(error)
    if A.device.type == "cpu":
        try:
            if vectors:
                values, vecs = np.linalg.eig(A64.numpy())
                return torch.from_numpy(values).to(torch.complex128), torch.from_numpy(vecs).to(torch.complex128)
            return torch.from_numpy(np.linalg.eigvals(A64.numpy())).to(torch.complex128), None
        except np.linalg.LinAlgError as error:
            failure += f"; OpenBLAS geev: {error}"
    raise ValueError(f"{what}: LAPACK geev did not converge ({failure})")


def eig(A: Tensor, *, what: str = "eigenproblem") -> tuple[Tensor, Tensor]:
    """Eigenvalues ``(..., N)`` and right eigenvectors ``(..., N, N)`` (columns), complex128.

    LAPACK ``geev`` in float64 on one thread (``A`` is converted; rank-one and defective matrices
    are fine: where oneMKL does not converge, numpy's OpenBLAS ``geev`` is used, see :func:`_geev`).

    Raises:
        ValueError: ``A`` is not square or holds NaN/Inf, or LAPACK did not converge (the message
            names ``what``).
    """
    _square(A, what)
    check_finite(A, "the matrix", what)
    values, vectors = _geev(A, what, vectors=True)
    return values, vectors


def eigvals(A: Tensor, *, what: str = "eigenvalues") -> Tensor:
    """Eigenvalues ``(..., N)`` complex128 (LAPACK ``geev`` in float64, one thread; refusals as :func:`eig`)."""
    _square(A, what)
    check_finite(A, "the matrix", what)
    return _geev(A, what, vectors=False)[0]
