"""Row-exact attention for bf16 on a CPU: each row meets the kernel in shapes of its own, so a pass's rows equal single steps bit for bit.

Speculative decoding verifies n tokens in one pass and must give the logits n single steps would
(greedy output equals target-only greedy, token for token). PyTorch's CPU flash attention does not:
a row's result depends on how many keys the call holds (masked or not) and on how many query rows
share its block (both measured), so the same row comes out a few ulps apart between a 1-row step
and a 9-row verify pass. In float32 that never flips a token in practice; in bf16 every output is rounded
to 8 bits and the ulps become different tokens (measured: the embedded model diverged from its own
target-only greedy within 8-24 tokens in 3 of 4 chats).

So every row, in a single step as in any pass, meets the kernel in shapes of its own:
- its query in a block of Q_ROWS rows (a row's GQA heads are rows of their key head's block, padding
  rows are zeros), one block per batch item of a call; a row does not depend on the other rows;
- its keys in the order its single step holds them, padded with masked keys to a length set by its own
  key count alone (the next multiple of KV_BLOCK), never by the pass; rows of one length share a call.
A row that sees a contiguous prefix (single steps, chain verify, prefill, a static cache's filled
slots) reads the keys as they lie. A token tree's row sees the prefix and its ancestors: its keys are
gathered into the contiguous layout of a root-to-leaf path ("lane"), which is what its single step
holds after compaction; the rows of a path share its leaf's lane. One plan (lanes, calls, masks) serves
all layers of a pass. tests/engine/test_packed.py checks it on random tensors (GQA or not, across the
512 boundary, trees) and through whole models, each check with a planted twin that fails.

Measured on the embedded model (2-core AMD EPYC, bf16 packed, medians of 9 interleaved repeats, load
average 4-4.3 at 1 thread, 2.9 at 2), against one kernel call per row (in parentheses), at 335 tokens
of context: v(5) / v(9) / v(17) = 1.05 / 1.22 / 1.66 target steps at 1 thread (2.14 / 3.31 / 5.81) and
0.95 / 1.08 / 1.31 at 2 (1.76 / 2.62 / 4.35); one step 23.5 ms (26.5) and 21.4 ms (21.6). At 1500
tokens, 1 thread: one step 32.9 ms (56.4), v(9) 1.38 (5.95). Prefill, 1 thread: 300 tokens 0.25 s
(1.20 s), 1500 tokens 2.2 s (138 s at 2 threads). Blocks of 4 / 8 / 12 / 16 / 32 rows gave v(9) 1.34 /
1.29 / 1.23 / 1.24 / 1.22 and a step of 28.0 / 28.3 / 28.7 / 28.4 / 29.3 ms in one run; key multiples
of 64 to 512 were level within noise. Details in docs/cpu-path.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

NAME = "speclens_rows"
Q_ROWS = 16  # query rows (row, GQA head) per kernel block: a block costs a few kernel calls, so few large ones pay
KV_BLOCK = 128  # a row's keys are padded to a multiple of this: less padding for a step, fewer calls for a pass


@dataclass(frozen=True)
class _Call:
    """One kernel call: nb blocks of Q_ROWS query rows, all against the same key layout."""

    rows: torch.Tensor  # [nb * Q_ROWS] long: query rows (row * g + head in group); n * g pads with a zero row
    keys: torch.Tensor  # [L] long, L a multiple of KV_BLOCK: key positions in the rows' order (0 pads, masked)
    mask: torch.Tensor  # [nb, 1, Q_ROWS, L] additive: 0 seen, -inf not
    real: int  # rows before the padding


def row_exact_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        scale: float | None = None, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Attention of n query rows, each exactly as its single step computes it -> [1, h, n, d].

    query [1, h, n, d], key/value [1, kvh, S, d]. mask None: causal, the n queries being positions
    S-n..S-1. mask [1, 1, n, >=S] (bool, or additive 0 / minimum): the keys row i may see, e.g. a token
    tree's prefix and ancestors, or a static cache's filled slots."""
    h, n, d = query.shape[1:]
    kvh = key.shape[1]
    g = h // kvh  # query heads per key head
    rows = query[0].unflatten(0, (kvh, g)).permute(2, 1, 0, 3).reshape(n * g, kvh, d)  # [(row, head in group), kvh, d]
    rows = torch.cat([rows, rows.new_zeros(1, kvh, d)])  # row n * g: the zeros that pad blocks
    out = rows.new_empty(n * g, kvh, d)
    for call in _plan(mask, n, key.shape[2], g, query.dtype, query.device):
        nb = len(call.rows) // Q_ROWS
        q = rows.index_select(0, call.rows).view(nb, Q_ROWS, kvh, d).transpose(1, 2)  # [nb, kvh, Q_ROWS, d]
        k = key[0].index_select(1, call.keys).expand(nb, -1, -1, -1)  # [nb, kvh, L, d], one copy shared
        v = value[0].index_select(1, call.keys).expand(nb, -1, -1, -1)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=call.mask, scale=scale)  # [nb, kvh, Q_ROWS, d]
        out.index_copy_(0, call.rows[: call.real], o.transpose(1, 2).reshape(nb * Q_ROWS, kvh, d)[: call.real])
    return out.view(n, g, kvh, d).permute(0, 2, 1, 3).reshape(1, n, h, d).transpose(1, 2)


_last: tuple = (None, None, [])  # (key, seen, plan) of the last pass: its layers share one plan


def _plan(mask: torch.Tensor | None, n: int, size: int, g: int, dtype: torch.dtype, device) -> list[_Call]:
    """The calls for a pass, made once per pass: every layer gets the same mask (compared, not trusted)."""
    global _last
    seen = None if mask is None else _seen(mask, size)
    key = (n, size, g, dtype, device)
    last_key, last_seen, plan = _last
    if key == last_key and (seen is None) == (last_seen is None) and (seen is None or torch.equal(seen, last_seen)):
        return plan
    if seen is None:  # causal: row i is position size - n + i
        seen = torch.arange(size)[None, :] <= torch.arange(size - n, size)[:, None]
    plan = _calls(seen.cpu(), g, dtype, device)
    _last = (key, None if mask is None else seen.clone(), plan)  # a copy: the mask may be reused, changed
    return plan


def _seen(mask: torch.Tensor, size: int) -> torch.Tensor:
    """[n, size] bool: which keys each row sees."""
    line = mask[0, 0, :, :size]
    return line if line.dtype == torch.bool else line == 0


def _calls(seen: torch.Tensor, g: int, dtype: torch.dtype, device) -> list[_Call]:
    n, size = seen.shape
    counts = seen.sum(1).tolist()
    calls = []
    for layout, members in _lanes(seen).items():
        by_length: dict[int, list[int]] = {}
        for r in members:
            by_length.setdefault(_key_length(counts[r], size), []).append(r)
        for length, rs in sorted(by_length.items()):
            keys = torch.arange(size) if layout is None else seen[layout].nonzero().squeeze(1)
            held = min(length, len(keys))
            keys = F.pad(keys[:held], (0, length - held))  # [length]: key 0 pads, masked below
            real = torch.arange(length) < held
            visible = seen[rs][:, keys] & real  # [len(rs), length]
            q_rows = torch.tensor([r * g + j for r in rs for j in range(g)])
            visible = visible.repeat_interleave(g, dim=0)
            pad = -len(q_rows) % Q_ROWS
            q_rows = F.pad(q_rows, (0, pad), value=n * g)
            first = torch.zeros(pad, length, dtype=torch.bool)
            first[:, 0] = True  # padding rows see one key, so no row is wholly masked
            visible = torch.cat([visible, first])
            additive = torch.zeros(visible.shape, dtype=dtype).masked_fill(~visible, float("-inf"))
            calls.append(_Call(q_rows.to(device), keys.to(device),
                               additive.view(-1, 1, Q_ROWS, length).to(device), len(rs) * g))
    return calls


def _key_length(count: int, size: int) -> int:
    """The keys a row of `count` keys meets the kernel with: a function of its count alone, never of the
    pass (`size`, its key count, is unused), so the row's call has its single step's shape."""
    return max(1, -(-count // KV_BLOCK)) * KV_BLOCK


def _lanes(seen: torch.Tensor) -> dict[int | None, list[int]]:
    """Key layouts and the rows that read each -> {None: rows that see a prefix of the keys as they are,
    r: rows whose keys are the first ones of row r's keys in position order (r and its ancestors)}."""
    n, size = seen.shape
    counts = seen.sum(1)  # [n]
    prefix = (seen == (torch.arange(size)[None, :] < counts[:, None])).all(1).tolist()
    lanes: dict[int | None, list[int]] = {None: [r for r in range(n) if prefix[r]]}
    tree = [r for r in range(n) if not prefix[r]]
    if tree:
        s = seen[tree].float()  # [t, size]
        last = (seen[tree] * torch.arange(1, size + 1)).amax(1)  # one past each row's last key
        upto = (torch.arange(size)[None, :] < last[:, None]).float()
        # row a reads row b's layout when b's keys up to a's last key are a's keys: |(a xor b) ∩ upto(a)| = 0
        fits = ((upto @ s.T - 2 * (s @ s.T) + counts[tree].float()[:, None]) == 0).tolist()
        for a in sorted(range(len(tree)), key=lambda a: -s[a].sum().item()):  # leaves before ancestors
            home = next((b for b in range(len(tree)) if tree[b] in lanes and fits[a][b]), a)
            lanes.setdefault(tree[home], []).append(tree[a])
    return {layout: rows for layout, rows in lanes.items() if rows}


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
