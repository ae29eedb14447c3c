"""Row-exact attention for bf16 on a CPU: a row's output does not depend on how many rows its pass has.

Speculative decoding verifies n tokens in one pass and must give the logits n single steps would
(greedy output equals target-only greedy, token for token). PyTorch's CPU flash attention does not:
a row's result depends on how many keys the call holds (masked or not) and on how many query rows
share its block (both measured), so the same row comes out a few ulps apart between a 1-row step
and a 9-row verify pass. In float32 that never flips a token in practice; in bf16 every output is rounded
to 8 bits and the ulps become different tokens (measured: the embedded model diverged from its own
target-only greedy within 8-24 tokens in 3 of 4 chats).

Here every row of a pass is computed by the very call a single step makes for it: one query row
against exactly the keys it may see (its position and before; under a mask, the mask's row: a token
tree's prefix and ancestors, or a static cache's filled slots), gathered in position order. A single step is then unchanged, and row i of
a verify pass is bit-identical to its single step by construction, whatever the kernel does inside
(tests/engine/test_packed.py checks it on random tensors and through whole models). The cost is n
kernel calls for n rows: small next to the linears of a verify pass, though a long prompt's prefill
pays it per token too.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

NAME = "speclens_rows"


def row_exact_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        scale: float | None = None, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Attention of n query rows, one call per row against exactly the keys that row sees -> [1, h, n, d].

    query [1, h, n, d], key/value [1, kvh, S, d]. mask None: causal, the n queries being positions
    S-n..S-1. mask [1, 1, n, S] (bool, or additive 0 / -inf): the keys row i may see, e.g. a token tree's
    prefix and ancestors, or a static cache's filled slots. Row i is then computed from the same keys, in
    the same order, as the single step that will hold them after compaction, so it is bit-identical."""
    n, size = query.shape[2], key.shape[2]
    gqa = key.shape[1] != query.shape[1]
    rows = []
    for i in range(n):
        keys, values = _visible(key, value, mask, i, size - n + i + 1)
        rows.append(F.scaled_dot_product_attention(query[:, :, i : i + 1], keys, values, scale=scale, enable_gqa=gqa))
    return rows[0] if n == 1 else torch.cat(rows, dim=2)


def _visible(key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None, row: int, causal: int):
    """The keys and values query `row` attends to: the first `causal` without a mask, else the mask's row."""
    if mask is None:
        return key[:, :, :causal], value[:, :, :causal]
    line = mask[0, 0, row, : key.shape[2]]
    seen = line if line.dtype == torch.bool else line == 0
    count = int(seen.sum())
    if bool(seen[:count].all()):  # a prefix (causal, or a static buffer's filled slots): a view, no copy
        return key[:, :, :count], value[:, :, :count]
    index = seen.nonzero().squeeze(-1)  # a tree row: the prefix, then its ancestors in order
    return key.index_select(2, index), value.index_select(2, index)


def _attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """transformers' attention interface: returns (output [b, n, h, d], no weights)."""
    batch_of_one = query.shape[0] == 1 and getattr(module, "sliding_window", None) is None
    if not batch_of_one or dropout or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    mask = attention_mask if attention_mask is not None and attention_mask.dim() == 4 else None
    out = row_exact_attention(query, key, value, scaling, mask)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, _attention)


def row_exact_unsupported(model) -> str | None:
    """Why this model's attention has no row-exact form here (None when it has one): logit soft-capping
    and sliding windows need the stock kernels, which are not row-exact in bf16."""
    config = model.config.get_text_config()
    if getattr(config, "attn_logit_softcapping", None):
        return "its attention soft-caps logits"
    if getattr(config, "sliding_window", None) and (getattr(config, "use_sliding_window", True) or any(
            t != "full_attention" for t in (getattr(config, "layer_types", None) or ()))):
        return "its attention uses a sliding window"
    return None


def use_row_exact_attention(model) -> bool:
    """Switch a model to row-exact attention; False where its family cannot choose its attention."""
    if row_exact_unsupported(model) is not None:
        return False
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, AttributeError, NotImplementedError):
        return False
    return True
