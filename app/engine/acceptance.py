"""The acceptance rule (Leviathan et al. 2023, Algorithm 1): `decide` on tensors, `accept` with one host sync.

p is the target's distribution, q the draft's, x the drafted tokens. Every round kind and both cache
kinds go through `accept`, so the rule, its residual and its top entries exist once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from . import rows
from .events import Top, TopEntries
from .sampling import sample

RESIDUAL_EPS = 1e-6  # below this mass the residual is numerical noise (p ~ q): fall back to p
TOP_N = 5  # entries of p, q and the residual kept per drafted position and on corrected tokens


class NonFiniteError(RuntimeError):
    """A model produced NaN or infinite logits: no token of that round can be trusted, none is emitted."""

    def __init__(self, which: str):
        super().__init__(
            f"the {which} model produced NaN or infinite values, so no token can be chosen; its weights may be "
            "damaged, or its dtype may overflow (try float32)"
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """Outcome of one acceptance test, on the host: what the test saw and drew, per drafted position."""

    drafts: tuple[int, ...]  # x_1..x_g, including any after the first rejection
    n_accepted: int
    next_token: int  # y: corrected (n < g) or bonus/target (n == g)
    p_y: float  # p_{n+1}(y): the target's probability of the new token at its position
    p_x: tuple[float, ...]  # p_i(x_i) per drafted position
    q_x: tuple[float, ...]  # q_i(x_i) per drafted position
    accept_prob: tuple[float, ...]  # min(1, p_i(x_i) / q_i(x_i))
    overlap: tuple[float, ...]  # sum_x min(p_i, q_i) per drafted position
    u: tuple[float, ...]  # the uniform draw per tested position: n accepted, then the rejected one
    top_p: tuple[Top, ...]  # top entries of p_i per drafted position, then of p_{g+1}
    top_q: tuple[Top, ...]  # top entries of q_i per drafted position
    next_top: Top  # top entries of the distribution y was drawn from (residual, or p)
    nodes: tuple[int, ...] = ()  # tree rounds: the tree node of each draft (empty for a chain)

    def node(self, i: int) -> int | None:
        """The tree node draft i came from; None in a chain round."""
        return self.nodes[i] if i < len(self.nodes) else None

    @property
    def top(self) -> TopEntries | None:
        """p, q and the residual at the rejected position; None when nothing was rejected."""
        n = self.n_accepted
        return TopEntries(self.top_p[n], self.top_q[n], self.next_top) if n < len(self.drafts) else None


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(p - q, 0)) over the last dim; p itself where that mass is below RESIDUAL_EPS (p ~ q)."""
    excess = (p - q).clamp_min(0.0)
    mass = excess.sum(-1, keepdim=True)
    return torch.where(mass > RESIDUAL_EPS, excess / mass.clamp_min(RESIDUAL_EPS), p)


def decide(p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, generator: torch.Generator, greedy: bool = False):
    """The acceptance rule on tensors, batched over any leading dims; `accept` is its one-sequence form.

    p [..., g + 1, V], q [..., g, V], x [..., g] (g may be 0: then y is drawn from p_1) -> (n [...]
    leading acceptances, y [...] the corrected or bonus token, p_x [..., g], q_x [..., g], ratio [..., g],
    dist [..., V] the distribution y was drawn from, u [..., g] the uniform draws: position i passes
    when u_i < ratio_i).
    """
    g = x.shape[-1]
    p_x = p[..., :g, :].gather(-1, x.unsqueeze(-1)).squeeze(-1)
    q_x = q.gather(-1, x.unsqueeze(-1)).squeeze(-1)  # > 0 since x_i was drawn from q_i, guarded anyway
    ratio = (p_x / q_x.clamp_min(torch.finfo(q_x.dtype).tiny)).clamp_max(1.0)
    u = torch.rand(ratio.shape, generator=generator, device=p.device)  # g = 0 draws nothing
    n = (u < ratio).long().cumprod(-1).sum(-1)  # leading acceptances, as a tensor
    # The residual at the first rejection, else p_{g+1} for the bonus token.
    rows = torch.cat([residual(p[..., :g, :], q), p[..., g:, :]], dim=-2)
    dist = rows.gather(-2, n[..., None, None].expand(*n.shape, 1, rows.shape[-1])).squeeze(-2)
    return n, sample(dist, generator, greedy), p_x, q_x, ratio, dist, u


def accept(
    p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, generator: torch.Generator, greedy: bool = False,
    before_sync: Callable[[], None] | None = None,
) -> Verdict:
    """The acceptance rule for one sequence. p [g + 1, V], q [g, V], x [g] (g >= 0), all on one device.

    Drafts, decisions, draws, finiteness and top entries come back in one packed transfer: the round's
    only host sync. before_sync() runs once the device work is queued, just before it (the round's clock mark).
    greedy: p and q are one-hot, so every draw is the argmax (see `sample`).
    """
    if greedy:
        return _accept_greedy(p, q, x, generator, before_sync)
    return _accept_any(p, q, x, generator, greedy, before_sync)


def _accept_any(p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, generator: torch.Generator, greedy: bool,
                before_sync: Callable[[], None] | None) -> Verdict:
    """`accept` on any p and q rows: the rule, its residual and the top entries along the whole vocabulary."""
    g = len(x)
    n, y, p_x, q_x, ratio, dist, u = decide(p, q, x, generator, greedy)
    overlap = torch.minimum(p[:g], q).sum(-1)
    p_y = p.reshape(-1).gather(0, (n * p.shape[-1] + y).view(1))
    finite = rows.finite_probs(p, q).float()
    k = min(TOP_N, p.shape[-1])
    # rows p_1..p_{g+1}, q_1..q_g, dist: each part on its own (a cat would copy 2g + 2 vocabulary rows)
    parts = [rows.topk(part, k) for part in (p, q, dist[None])]
    scalars = torch.cat([n.float().view(1), y.float().view(1), p_y, finite])
    packed = torch.cat([scalars, x.float(), p_x, q_x, ratio, overlap, u, *(i.float().view(-1) for _, i in parts),
                        *(v.view(-1) for v, _ in parts)])
    host, rest = _synced(packed, before_sync)
    tops = _tops(rest[6 * g :], 2 * g + 2, k)
    return _verdict(host, rest, g, tuple(tops[: g + 1]), tuple(tops[g + 1 : 2 * g + 1]), tops[-1])


def _accept_greedy(p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, generator: torch.Generator,
                   before_sync: Callable[[], None] | None) -> Verdict:
    """`accept` where p and q are logits_to_probs' one-hot rows (greedy): every field follows from the rows'
    argmaxes, so nothing but an argmax and a maximum runs along the vocabulary (the general form's residual,
    overlap, sums and top-k are each a pass over every row: on the native path, a fifth of a token's time).
    The same Verdict, and the same draws from the generator, as the general form on these rows."""
    g = len(x)
    a = rows.argmax(p)  # [g + 1]: each row's one token
    q_top = rows.argmax(q) if g else a[:0]  # [g]
    p_x = p[:g].gather(-1, x.unsqueeze(-1)).squeeze(-1)  # 1 where the target's token is the draft's, else 0
    q_x = q.gather(-1, x.unsqueeze(-1)).squeeze(-1)
    ratio = (p_x / q_x.clamp_min(torch.finfo(q_x.dtype).tiny)).clamp_max(1.0)
    u = torch.rand(ratio.shape, generator=generator, device=p.device)  # drawn as decide draws them
    n = (u < ratio).long().cumprod(-1).sum(-1)
    y = a.gather(0, n.view(1))  # a rejection's residual of two one-hot rows is p's own row
    overlap = (a[:g] == q_top).float()  # sum_x min(p, q) of two one-hot rows: 1 where they are one token
    finite = torch.stack([p.amax().isfinite(), q.amax().isfinite() if g else p.new_ones((), dtype=torch.bool)])
    scalars = torch.cat([n.float().view(1), y.float(), p.amax(-1).gather(0, n.view(1)), finite.float()])
    packed = torch.cat([scalars, x.float(), p_x, q_x, ratio, overlap, u, a.float(), q_top.float(),
                        p.amax(-1), q.amax(-1) if g else p.new_zeros(0)])
    host, rest = _synced(packed, before_sync)
    tail = rest[6 * g :]
    ids_p, ids_q, mass_p, mass_q = tail[: g + 1], tail[g + 1 : 2 * g + 1], tail[2 * g + 1 : 3 * g + 2], tail[3 * g + 2 :]
    top_p = tuple(((int(i), v),) if v > 0 else () for i, v in zip(ids_p, mass_p, strict=True))
    top_q = tuple(((int(i), v),) if v > 0 else () for i, v in zip(ids_q, mass_q, strict=True))
    return _verdict(host, rest, g, top_p, top_q, top_p[int(host[0])])


def _synced(packed: torch.Tensor, before_sync: Callable[[], None] | None) -> tuple[list[float], list[float]]:
    """The round's one host sync of a packed verdict (n, y, p_y, the two finiteness flags, then the rest):
    (those five, the rest); a non-finite target or draft row refused."""
    if before_sync is not None:
        before_sync()
    host = packed.tolist()
    if not host[3] or not host[4]:
        raise NonFiniteError("target" if not host[3] else "draft")
    return host[:5], host[5:]


def _verdict(head: list[float], rest: list[float], g: int, top_p: tuple[Top, ...], top_q: tuple[Top, ...],
             next_top: Top) -> Verdict:
    """The Verdict of a synced round: rest opens with x, p_x, q_x, ratio, overlap and u, g values each."""
    n_acc = int(head[0])
    fields = [tuple(rest[j * g : (j + 1) * g]) for j in range(6)]
    return Verdict(
        drafts=tuple(int(t) for t in fields[0]), n_accepted=n_acc, next_token=int(head[1]), p_y=head[2],
        p_x=fields[1], q_x=fields[2], accept_prob=fields[3], overlap=fields[4], u=fields[5][: n_acc + 1],
        top_p=top_p, top_q=top_q, next_top=next_top,
    )


def _tops(host: list[float], rows: int, k: int) -> list[Top]:
    """Flat topk ids then values for `rows` rows -> per row (token id, prob), zero-probability entries left out."""
    ids, values = host[: rows * k], host[rows * k : 2 * rows * k]
    return [
        tuple((int(i), v) for i, v in zip(ids[r * k : (r + 1) * k], values[r * k : (r + 1) * k], strict=True) if v > 0)
        for r in range(rows)
    ]
