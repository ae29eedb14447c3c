"""Row-exact attention for bf16 on a CPU: a row's output does not depend on how many rows its pass has.

Speculative decoding verifies n tokens in one pass and must give the logits n single steps would
(greedy output equals target-only greedy, token for token). PyTorch's CPU flash attention does not:
its softmax sums run over key blocks of 512 with a vectorised tail, and its GEMMs over query blocks
whose size follows the pass, so the same row comes out a few ulps apart between a 1-row step and a
9-row verify pass. In float32 that never flips a token in practice; in bf16 every output is rounded
to 8 bits and the ulps become different tokens (measured: the embedded model diverged from its own
target-only greedy within 8-24 tokens in 3 of 4 chats).

Here every pass is cut into blocks of Q_ROWS query rows (padded with zero rows) and the keys padded
with masked zeros to a multiple of KV_BLOCK, so every row meets the kernel in the same shapes
whatever its pass: row i's output is then bit-identical between a single step and any verify pass
(tests/engine/test_packed.py checks it on random tensors and through whole models). The cost is a few
masked columns and rows; attention is a small share of a CPU step next to the linears.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

NAME = "speclens_rows"
Q_ROWS = 32  # below 192 query rows the kernel splits queries into blocks of 32: one full block per call
KV_BLOCK = 512  # the kernel's key block: padded to whole blocks, no row ever meets a partial one


def row_exact_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        scale: float | None = None) -> torch.Tensor:
    """Causal attention of the last n positions: query [1, h, n, d], key/value [1, kvh, S, d] holding
    positions 0..S-1 (the n queries are positions S-n..S-1) -> [1, h, n, d]."""
    n, size = query.shape[2], key.shape[2]
    padded = -(-size // KV_BLOCK) * KV_BLOCK
    key = F.pad(key, (0, 0, 0, padded - size))
    value = F.pad(value, (0, 0, 0, padded - size))
    columns = torch.arange(padded, device=query.device)
    held = size - n
    out = []
    for start in range(0, n, Q_ROWS):
        q = query[:, :, start : start + Q_ROWS]
        rows = q.shape[2]
        q = F.pad(q, (0, 0, 0, Q_ROWS - rows))  # [1, h, Q_ROWS, d]
        position = torch.arange(held + start, held + start + Q_ROWS, device=query.device)
        mask = (columns[None, :] <= position[:, None]).view(1, 1, Q_ROWS, padded)
        o = F.scaled_dot_product_attention(q, key, value, attn_mask=mask, scale=scale,
                                           enable_gqa=key.shape[1] != query.shape[1])
        out.append(o[:, :, :rows])
    return torch.cat(out, dim=2)


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
