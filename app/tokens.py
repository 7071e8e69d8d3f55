"""Token-level attention of one model on one image: every layer × head row of a query token, and
the absorbing-chain reading (expected visits from that token, the Perron vector, validity); the
tokens the spatial maps leave out (class token, registers) apart.

A thin composition of library calls (the attention of the image's forward record,
:attr:`~infsa_viz.forward.ForwardRecord.attention`; :meth:`~infsa_viz.model.capture.AttentionRecord.attention_matrix`,
:func:`infsa_viz.spectral.expected_visits`, :func:`~infsa_viz.spectral.perron_vector`,
:func:`~infsa_viz.spectral.absorption_check`), cached.
"""

from __future__ import annotations

from dataclasses import dataclass

import catalog
import compute
import inputs
import numpy as np
import streamlit as st
import torch
from catalog import ModelEntry
from inputs import ImageChoice

from infsa_viz.model import AttentionRecord
from infsa_viz.spectral import absorption_check, expected_visits, perron_vector
from infsa_viz.spectral.graph import resolve_discount


#: How the token viewer names each kind of token before the patches (:attr:`ViTConfig.prefix_kinds
#: <infsa_viz.model.ViTConfig.prefix_kinds>`), and the title of each group of tokens.
PREFIX_NAMES = {"class": "CLS", "distillation": "distillation token", "register": "register"}
GROUPS = {"class": "class token", "distillation": "distillation token", "register": "registers"}


@dataclass(frozen=True, eq=False)
class Attention:
    """Dense attention of every layer: ``matrices (L, H, N, N)`` (what each layer applies to v,
    without ρ), ``gamma (L, H)`` (learned ρ, or the fixed γ of layers without one), the number of
    prefix tokens (class, distillation, registers: ``kinds``, one per prefix token, as the model's
    config declares them) and the patch ``grid (h, w)``."""

    matrices: np.ndarray
    gamma: np.ndarray
    learned: tuple[bool, ...]
    prefix: int
    grid: tuple[int, int]
    kinds: tuple[str, ...] = ()

    def _kind(self, token: int) -> str:
        return self.kinds[token] if len(self.kinds) == self.prefix else "prefix"

    def token_name(self, token: int) -> str:
        if token < self.prefix:
            kind = self._kind(token)
            if kind == "register":
                first, count = self.kinds.index("register"), self.kinds.count("register")
                return f"register {token - first + 1} of {count}"
            return PREFIX_NAMES.get(kind, f"prefix token {token}")
        r, c = divmod(token - self.prefix, self.grid[1])
        return f"patch (row {r}, col {c})"

    def groups(self) -> list[tuple[str, range]]:
        """The tokens by kind, in order: ``(title, token indices)`` — the class token, the distillation
        token, the registers (each where the model has them), then the patches."""
        out: list[tuple[str, range]] = []
        for token in range(self.prefix):
            title = GROUPS.get(self._kind(token), "prefix tokens")
            if out and out[-1][0] == title:
                out[-1] = (title, range(out[-1][1].start, token + 1))
            else:
                out.append((title, range(token, token + 1)))
        return [*out, (f"patches ({self.grid[0]} × {self.grid[1]})", range(self.prefix, self.matrices.shape[-1]))]

    def to_grid(self, values: np.ndarray) -> np.ndarray:
        """``(..., N)`` per-token values → ``(..., h, w)`` (prefix tokens dropped)."""
        return values[..., self.prefix:].reshape(*values.shape[:-1], *self.grid)

    def apart(self, token: int, head: int | str) -> tuple[list[str], np.ndarray]:
        """What the spatial maps leave out: the attention of query ``token`` in every layer (one head,
        or the head mean) to each token before the patches, and to all patches together. Returns the
        column names and the values ``(L, prefix + 1)``."""
        rows = self.matrices[:, :, token, :]  # (L, H, N)
        row = rows.mean(1) if head == "mean" else rows[:, int(head)]  # (L, N)
        values = np.concatenate([row[:, :self.prefix], row[:, self.prefix:].sum(-1, keepdims=True)], axis=1)
        return [*(self.token_name(t) for t in range(self.prefix)), "patches (total)"], values


def layout(att: Attention) -> str:
    """The model's tokens by kind, with their indices (``0 CLS · 1–4 registers · 5–8 patches (2 × 2)``)."""
    def span(r: range) -> str:
        return str(r.start) if len(r) == 1 else f"{r.start}–{r.stop - 1}"

    return " · ".join(f"{span(r)} {title}" for title, r in att.groups())


def layer_gamma(record: AttentionRecord, heads: int) -> np.ndarray:
    """``(H,)``: the discount γ of each head of a layer, by the library's one rule
    (:func:`~infsa_viz.spectral.graph.resolve_discount`: the learned ρ, else the fixed default)."""
    rho = None if record.rho is None else record.rho.detach().double()
    return np.array([resolve_discount(rho, head=h).as_float() for h in range(heads)])


def head_gamma(gammas: np.ndarray, learned: bool, head: int | str) -> tuple[float, str]:
    """γ of one head (an index) or of the head mean, and where it came from
    (:func:`~infsa_viz.spectral.graph.resolve_discount` on the layer's per-head γ)."""
    discount = resolve_discount(torch.from_numpy(gammas) if learned else None,
                                head=head if head == "mean" else int(head))
    return discount.as_float(), discount.source


@st.cache_data(show_spinner=False, max_entries=64)
def _attention(path: str, version: int, image_key: str, _image: ImageChoice) -> Attention:
    model = catalog.model_at(path, version)[0]
    records = compute.record_at(path, version, _image).attention  # the image's one forward record
    matrices = np.stack([r.attention_matrix()[0].double().numpy() for r in records])  # (L, H, N, N)
    gamma = np.stack([layer_gamma(r, matrices.shape[1]) for r in records])
    grid = records[0].grid
    n = matrices.shape[-1] - records[0].num_prefix_tokens
    if grid is None:
        side = round(n ** 0.5)
        grid = (side, side)
    return Attention(matrices, gamma, tuple(r.rho is not None for r in records), records[0].num_prefix_tokens,
                     tuple(grid), tuple(getattr(model.config, "prefix_kinds", ())))


def attention(entry: ModelEntry, image: ImageChoice) -> Attention:
    """Dense attention of every layer and head of ``entry`` on ``image`` (cached)."""
    image = inputs.for_model(image, entry)
    return _attention(entry.source, entry.version, image.key, image)


@dataclass(frozen=True)
class TokenReading:
    """One layer's graph (one head, or the head mean) read from query token ``token``.

    ``row``: the attention row of the token ``(h, w)``; ``visits``: expected visits from the token
    ``e_tᵀ(I − γA)⁻¹`` ``(h, w)``; ``perron``: the left Perron vector of A ``(h, w)``;
    ``row_mass``: ``γ·Σ_j A_tj`` (the reading holds on the token's row when ≤ 1); ``share``: the
    share of all rows where it holds; ``gamma``: the discount used and ``gamma_source`` where it
    came from."""

    row: np.ndarray
    visits: np.ndarray
    perron: np.ndarray
    row_mass: float
    share: float
    gamma: float
    gamma_source: str


def token_reading(att: Attention, layer: int, head: int | str, token: int) -> TokenReading:
    """The :class:`TokenReading` of ``token`` in ``layer`` (``head``: an index or ``"mean"``)."""
    A = att.matrices[layer].mean(0) if head == "mean" else att.matrices[layer][int(head)]  # (N, N)
    gamma, source = head_gamma(att.gamma[layer], att.learned[layer], head)
    a = torch.from_numpy(A)[None]  # (1, N, N)
    visits = expected_visits(a, gamma, start=int(token)).visits[0].numpy()
    perron = perron_vector(a).vector[0].numpy()
    check = absorption_check(a, gamma)
    return TokenReading(row=att.to_grid(A[token]), visits=att.to_grid(visits), perron=att.to_grid(perron),
                        row_mass=float(1.0 - check.absorption[0, token]), share=float(check.valid_share[0]),
                        gamma=gamma, gamma_source=source)
