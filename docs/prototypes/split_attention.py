"""Issue #27 prototype (not imported by the app): canonical head/tail row attention. Checks that a pass row equals its single step bit for bit, and times a layer against app.machine.attention. Run from the repo root with the venv python."""
import time, torch
import torch.nn.functional as F
torch.set_num_threads(1)
Q_ROWS, G, TAIL_MIN = 16, 32, 32
T = TAIL_MIN + G
FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu

def plan(seen, g):
    n = len(seen)
    counts = seen.sum(1).tolist()
    heads = [G * max(0, (c - TAIL_MIN - 1) // G) for c in counts]
    tail_idx = torch.zeros(n, T, dtype=torch.long); valid = torch.zeros(n, T, dtype=torch.bool)
    for r in range(n):
        keys = seen[r].nonzero().squeeze(1)[heads[r]:]
        tail_idx[r, :len(keys)] = keys; valid[r, :len(keys)] = True
    groups = []
    for hl in sorted(set(heads) - {0}):
        rs = [r for r in range(n) if heads[r] == hl]
        qi = torch.tensor([r * g + j for r in rs for j in range(g)])
        pad = -len(qi) % Q_ROWS
        qi = F.pad(qi, (0, pad), value=n * g)
        groups.append((hl, rs, qi, torch.tensor(rs)))
    return tail_idx.flatten(), ~valid[:, None, None, :], groups

def split_attention(q, k, v, seen, scale, pl=None):
    """q [1,h,n,d], k/v [1,kvh,S,d], seen [n,S] bool -> [1,h,n,d]"""
    h, n, d = q.shape[1:]; kvh = k.shape[1]; g = h // kvh
    rows = q[0].unflatten(0, (kvh, g)).permute(2, 0, 1, 3)  # [n, kvh, g, d]
    tail_flat, hidden, groups = pl if pl is not None else plan(seen, g)
    kt = k[0].index_select(1, tail_flat).view(kvh, n, T, d).transpose(0, 1).float()  # [n,kvh,T,d]
    vt = v[0].index_select(1, tail_flat).view(kvh, n, T, d).transpose(0, 1).float()
    s = torch.matmul(rows.float(), kt.transpose(-1, -2)) * scale  # [n,kvh,g,T]
    s = s.masked_fill(hidden, float("-inf"))
    m = s.amax(-1, keepdim=True)
    p = torch.exp(s - m)
    l = p.sum(-1, keepdim=True)  # [n,kvh,g,1]
    o = torch.matmul(p, vt)  # [n,kvh,g,d]
    # heads
    oh = torch.zeros(n, kvh, g, d); lh = torch.full((n, kvh, g, 1), float("-inf"))
    flat = torch.cat([rows.reshape(n * kvh * 0 + n, kvh, g, d).permute(0, 2, 1, 3).reshape(n * g, kvh, d), rows.new_zeros(1, kvh, d)])
    for hl, rs, qi, idx in groups:
        nb = len(qi) // Q_ROWS
        qq = flat.index_select(0, qi).view(nb, Q_ROWS, kvh, d).transpose(1, 2)
        kk = k[:, :, :hl].expand(nb, -1, -1, -1); vv = v[:, :, :hl].expand(nb, -1, -1, -1)
        out, lse = FLASH(qq, kk, vv, scale=scale)  # [nb,kvh,Q,d], [nb,kvh,Q]
        out = out.transpose(1, 2).reshape(nb * Q_ROWS, kvh, d)[: len(rs) * g].view(len(rs), g, kvh, d).transpose(1, 2)
        lse = lse.transpose(1, 2).reshape(nb * Q_ROWS, kvh)[: len(rs) * g].view(len(rs), g, kvh).transpose(1, 2)
        oh.index_copy_(0, idx, out.float()); lh.index_copy_(0, idx, lse[..., None])
    mm = torch.maximum(lh, m)
    wh = torch.exp(lh - mm); wt = torch.exp(m - mm)
    res = (wh * oh + wt * o) / (wh + wt * l)  # [n,kvh,g,d]
    return res.to(q.dtype).permute(1, 2, 0, 3).reshape(1, h, n, d)

def tree_seen(held, parents):
    n = len(parents); seen = torch.zeros(1 + n, held + 1 + n, dtype=torch.bool)
    seen[:, : held + 1] = True; seen[0, held + 1:] = False
    paths = []
    for i, par in enumerate(parents):
        path = (paths[par] if par >= 0 else []) + [i]; paths.append(path)
        seen[1 + i, [held + 1 + j for j in path]] = True
    return seen, [[]] + paths

gen = torch.Generator().manual_seed(0)
bad = 0
for held in (0, 30, 37, 95, 334, 505, 1020):
    for parents in ([-1, -1, 0, 0, 2, 1], [-1 if i < 10 else (i - 10) // 10 * 10 for i in range(16)], list(range(-1, 16))):
        n = len(parents)
        q = torch.randn(1, 9, n + 1, 64, generator=gen).bfloat16(); k = torch.randn(1, 3, held + 1 + n, 64, generator=gen).bfloat16(); v = torch.randn_like(k)
        seen, paths = tree_seen(held, parents)
        whole = split_attention(q, k, v, seen, 0.125)
        for i, path in enumerate(paths):
            index = torch.tensor(list(range(held + 1)) + [held + 1 + j for j in path])
            c = len(index)
            single = split_attention(q[:, :, i:i+1], k.index_select(2, index), v.index_select(2, index), torch.ones(1, c, dtype=torch.bool), 0.125)
            if not torch.equal(single, whole[:, :, i:i+1]): bad += 1
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=seen, enable_gqa=True, scale=0.125)
        err = (whole.float() - ref).abs().max().item()
        assert err < 2e-2, err
print("mismatched rows", bad)

def t(fn, n=50):
    fn(); t0 = time.perf_counter()
    for _ in range(n): fn()
    return (time.perf_counter() - t0) / n * 1e6
from app.machine import attention
held = 335
for name, parents in (("chain17", list(range(-1, 16))), ("tree16", [-1 if i < 10 else (i - 10) // 10 * 10 for i in range(16)])):
    n = len(parents)
    q = torch.randn(1, 9, n + 1, 64).bfloat16(); k = torch.randn(1, 3, held + 1 + n, 64).bfloat16(); v = torch.randn_like(k)
    seen, _ = tree_seen(held, parents)
    pl = plan(seen, 3)
    mask = seen[None, None]
    attention._last = (None, None, [])
    attention.row_exact_attention(q, k, v, 0.125, mask)
    print(name, f"current {t(lambda: attention.row_exact_attention(q, k, v, 0.125, mask)):.0f} us/layer (plan cached)",
          f"split {t(lambda: split_attention(q, k, v, seen, 0.125, pl)):.0f} us/layer (plan once)", f"plan {t(lambda: plan(seen, 3)):.0f} us/pass")
q = torch.randn(1, 9, 1, 64).bfloat16(); k = torch.randn(1, 3, 336, 64).bfloat16(); v = torch.randn_like(k)
attention._last = (None, None, [])
pls = plan(torch.ones(1, 336, dtype=torch.bool), 3)
print("step", f"current {t(lambda: attention.row_exact_attention(q, k, v, 0.125, None)):.0f} us/layer",
      f"split {t(lambda: split_attention(q, k, v, None, 0.125, pls)):.0f}")
