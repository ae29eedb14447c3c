"""The block forms of argmax, top-k and finiteness (app/engine/rows.py) equal torch's own calls."""

import pytest
import torch

from app.engine import rows

V = 49152  # the embedded model's vocabulary: the block form runs


def _rows(seed: int, n: int = 3, v: int = V) -> torch.Tensor:
    return torch.randn(n, v, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("v", [V, 64 * 5, 50257, 63])  # blocks; blocks at the smallest width; torch's call twice
def test_argmax_equals_torch_on_random_rows_ties_and_broken_values(v):
    x = _rows(0, 4, v)
    x[1, : v // 2] = 7.0  # many equal maxima: the first wins
    x[1, v // 2 :] = 7.0
    x[2, v - 1] = float("inf")
    x[2, v // 3] = float("nan")  # a NaN beats +inf
    x[3, :] = float("-inf")  # all -inf: index 0
    assert torch.equal(rows.argmax(x), x.argmax(-1))
    assert torch.equal(rows.argmax(x[0]), x[0].argmax(-1))  # one row, no leading dims
    assert rows.argmax(x).tolist()[1:] == [0, v // 3, 0]


def test_argmax_finds_the_first_maximum_in_a_later_block():
    x = torch.zeros(1, V)
    x[0, 5 * rows.BLOCK + 9] = 2.0
    x[0, 40 * rows.BLOCK + 1] = 2.0
    assert rows.argmax(x).item() == 5 * rows.BLOCK + 9


@pytest.mark.parametrize("k", [1, 5, 40])
def test_topk_equals_torch_on_logits_and_probabilities(k):
    x = _rows(1)
    p = (x * 3).softmax(-1)
    for t in (x, p):
        values, ids = rows.topk(t, k)
        want = torch.topk(t, k, dim=-1)
        assert torch.equal(values, want.values) and torch.equal(ids, want.indices)


def test_topk_of_crowded_blocks_and_one_hot_rows():
    x = torch.full((2, V), -1.0)
    x[0, 128:133] = torch.tensor([5.0, 4.0, 3.0, 2.0, 1.0])  # the top five share one block
    x[1, 7000] = 1.0  # a one-hot row: then zeros-like ties
    values, ids = rows.topk(x, 5)
    assert ids[0].tolist() == [128, 129, 130, 131, 132] and values[0].tolist() == [5.0, 4.0, 3.0, 2.0, 1.0]
    assert ids[1, 0].item() == 7000 and values[1].tolist() == [1.0, -1.0, -1.0, -1.0, -1.0]
    assert torch.equal(values, torch.topk(x, 5, dim=-1).values)


def test_topk_with_nan_and_empty_batches_matches_torch():
    x = _rows(2, 2)
    x[1, 3000] = float("nan")
    values, ids = rows.topk(x, 5)
    want = torch.topk(x, 5, dim=-1)
    assert torch.equal(values.isnan(), want.values.isnan()) and ids[1, 0].item() == want.indices[1, 0].item() == 3000
    assert torch.equal(values[0], want.values[0]) and torch.equal(ids[0], want.indices[0])
    empty = torch.empty(0, V)
    assert rows.topk(empty, 5)[0].shape == (0, 5) and rows.argmax(empty).shape == (0,)


def test_finite_probs_sees_a_nan_or_inf_in_any_tensor():
    p = _rows(3).softmax(-1)
    q = _rows(4, 2).softmax(-1)
    assert rows.finite_probs(p, q, torch.empty(0, V)).tolist() == [True, True, True]
    for bad in (float("nan"), float("inf")):
        broken = q.clone()
        broken[1, 77] = bad
        assert rows.finite_probs(p, broken).tolist() == [True, False]
