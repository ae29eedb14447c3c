"""top-p without a full sort on a CPU (app/engine/sampling.py `top_p_filter`) keeps exactly the nucleus: the
tokens a full sort of the row in float64 keeps, up to float32 rounding of the probabilities right at its
edge. Peaked and flat rows, a nucleus far wider than the first candidates, top-k's -inf, several rows at
once. A filter that stopped at the first candidates fails the flat rows."""

from __future__ import annotations

import pytest
import torch

from app.engine import sampling
from app.engine.sampling import TOP_P_FIRST, top_p_filter

V = 49152  # the embedded model's vocabulary: wide enough for the block top-k


EDGE = 1e-5  # where the mass before a token is this close to top_p, float32 probabilities may decide either way


def nucleus(logits: torch.Tensor, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(kept, unsure) bool [..., V] by the full sort in float64: a token stays while the mass of the larger
    ones is below top_p; `unsure` marks tokens at the edge, where float32 rounding may tip it."""
    probs = logits.double().softmax(-1)
    top, order = torch.sort(probs, dim=-1, descending=True)
    before = top.cumsum(-1) - top
    kept = torch.empty_like(probs, dtype=torch.bool).scatter_(-1, order, before < top_p)
    unsure = torch.empty_like(kept).scatter_(-1, order, (before - top_p).abs() < EDGE)
    return kept, unsure


def agrees(filtered: torch.Tensor, logits: torch.Tensor, top_p: float) -> bool:
    kept, unsure = nucleus(logits, top_p)
    return torch.equal((~filtered.isinf()) & ~unsure, kept & ~unsure)


def rows_of(scale: float, n: int = 3, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, V, generator=gen) * scale  # large scale: a peaked row; small: a flat one


@pytest.mark.parametrize("scale", [8.0, 3.0, 0.3])
@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.99])
def test_the_nucleus_is_the_full_sorts(scale, top_p):
    logits = rows_of(scale)
    got = top_p_filter(logits, top_p)
    assert agrees(got, logits, top_p)
    assert torch.equal(got[~got.isinf()], logits[~got.isinf()])  # kept logits unchanged


def test_a_nucleus_wider_than_the_first_candidates_is_found():
    logits = rows_of(0.3)  # nearly uniform: top-p 0.9 keeps about 44,000 tokens
    got = top_p_filter(logits, 0.9)
    assert ((~got.isinf()).sum(-1) > 100 * TOP_P_FIRST).all()
    assert agrees(got, logits, 0.9)


def test_top_k_minus_infinity_and_a_lone_token():
    logits = rows_of(3.0, n=2)
    logits[0, 100:] = float("-inf")  # what top-k leaves: 100 candidates
    logits[1] = float("-inf")
    logits[1, 7] = 0.0  # one finite token: it always stays
    got = top_p_filter(logits, 0.9)
    assert agrees(got, logits, 0.9)
    assert (~got[0, 100:].isinf()).sum() == 0 and (~got[1].isinf()).sum() == 1 and got[1, 7] == 0.0


def test_stopping_at_the_first_candidates_is_caught():
    """Planted: no growth past the first candidates. The flat rows then keep too few tokens."""
    def first_only(logits, top_p):
        probs = logits.softmax(-1)
        top, order = torch.topk(probs, TOP_P_FIRST)
        before = top.cumsum(-1) - top
        kept = logits.gather(-1, order).masked_fill(before >= top_p, float("-inf"))
        return torch.full_like(logits, float("-inf")).scatter_(-1, order, kept)

    logits = rows_of(0.3)
    assert agrees(sampling.top_p_filter(logits, 0.9), logits, 0.9)
    assert not agrees(first_only(logits, 0.9), logits, 0.9)
