"""Row-exact attention for bf16 on a CPU: a row's output does not depend on how many rows its pass has.

Speculative decoding verifies n tokens in one pass and must give the logits n single steps would
(greedy output equals target-only greedy, token for token). PyTorch's CPU flash attention does not:
a row's result depends on how many keys the call holds (masked or not) and on how many query rows
share its block (both measured), so the same row comes out a few ulps apart between a 1-row step
and a 9-row verify pass. In float32 that never flips a token in practice; in bf16 every output is rounded
to 8 bits and the ulps become different tokens (measured: the embedded model diverged from its own
target-only greedy within 8-24 tokens in 3 of 4 chats).

Here every row of a pass is computed by the very call a single step makes for it: one query row
against exactly the keys of its position and before. A single step is then unchanged, and row i of
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
                        scale: float | None = None) -> torch.Tensor:
    """Causal attention of the last n positions: query [1, h, n, d], key/value [1, kvh, S, d] holding
    positions 0..S-1 (the n queries are positions S-n..S-1) -> [1, h, n, d], one call per row."""
    n, size = query.shape[2], key.shape[2]
    gqa = key.shape[1] != query.shape[1]
    held = size - n
    rows = [F.scaled_dot_product_attention(query[:, :, i : i + 1], key[:, :, : held + i + 1],
                                           value[:, :, : held + i + 1], scale=scale, enable_gqa=gqa)
            for i in range(n)]
    return rows[0] if n == 1 else torch.cat(rows, dim=2)


def _attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """transformers' attention interface: returns (output [b, n, h, d], no weights)."""
    causal_batch_of_one = query.shape[0] == 1 and getattr(module, "sliding_window", None) is None
    if not causal_batch_of_one or dropout or kwargs.get("position_bias") is not None or _holds_unused_keys(
            attention_mask):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    out = row_exact_attention(query, key, value, scaling)
    return out.transpose(1, 2).contiguous(), None


def _holds_unused_keys(mask: torch.Tensor | None) -> bool:
    """True when the last query may not see every key: the keys are a static cache's fixed-length buffer
    (or padded), not exactly the positions 0..S-1 that row-exact attention assumes."""
    if mask is None:
        return False
    last = mask[0, 0, -1]  # the newest query's row: under a plain causal mask it sees every key
    return not bool(last.all() if last.dtype == torch.bool else (last == 0).all())


AttentionInterface.register(NAME, _attention)


def use_row_exact_attention(model) -> bool:
    """Switch a model to row-exact attention; False where its family cannot choose its attention."""
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, AttributeError, NotImplementedError):
        return False
    return True
