"""Events yielded by the decoding generator: TokenEvent, RoundEvent, FinishedEvent, and the token Status.

Every consumer (CLI, benchmark, GUI worker, tests) sees the same frozen records, so
what is displayed is exactly what the engine did. They are built with keywords only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    ACCEPTED = "accepted"  # draft token kept by the min(1, p/q) test
    CORRECTED = "corrected"  # sampled from norm(max(p - q, 0)) after a rejection
    BONUS = "bonus"  # sampled from p after all drafted tokens were accepted
    TARGET = "target"  # sampled from p in a round with no draft (target-only decoding)
    REJECTED = "rejected"  # draft token refused; never part of the output


Top = tuple[tuple[int, float], ...]  # (token id, prob), largest first; zero-probability entries left out


@dataclass(frozen=True, slots=True)
class TopEntries:
    """The largest entries of p, q and the residual at a rejected position: (token id, prob)."""

    p: Top
    q: Top
    residual: Top


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenEvent:
    token_id: int
    status: Status
    round: int  # 0-based round index within this generation
    position: int  # 0-based position inside the round (draft slot i for accepted/rejected)
    p: float  # p(x) after temperature/top-k/top-p
    q: float | None  # q(x) for drafted tokens, else None
    accept_prob: float | None  # min(1, p(x)/q(x)) for drafted tokens, else None
    text: str = ""  # detokenised piece ("" when no tokenizer was given or bytes are pending)
    top: TopEntries | None = None  # only on corrected tokens
    u: float | None = None  # the uniform draw tested against accept_prob (accepted iff u < accept_prob); drafts only
    node: int | None = None  # tree rounds: the tree node (index into RoundEvent.tree_tokens) a draft came from

    @property
    def emitted(self) -> bool:
        return self.status is not Status.REJECTED


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundEvent:
    round: int
    gamma: int  # draft length requested for this round
    drafted: int  # tokens actually proposed (fewer at EOS, the length limit or no n-gram match)
    accepted: int  # leading draft tokens accepted, 0..drafted
    emitted: int  # tokens added to the output (accepted + 1, fewer when truncated)
    bonus: bool  # all drafted tokens accepted and a bonus token sampled
    overlap: tuple[float, ...]  # sum_x min(p_i(x), q_i(x)) per drafted position: the exact alpha_i
    draft_time: float  # seconds spent drafting
    verify_time: float  # seconds in the target forward pass plus the acceptance test
    context: int = 0  # tokens of the sequence (prompt and answer) before this round: what its pass attended to
    # What the acceptance test saw and drew, for step-through views and recordings. Every drafted
    # position i has x_i, its test inputs and the top entries of p_i and q_i; only positions up to the
    # first rejection were tested, so u is shorter than drafts after a rejection.
    drafts: tuple[int, ...] = ()  # x_1..x_drafted, including any after the first rejection
    u: tuple[float, ...] = ()  # uniform draw per tested position: the accepted ones, then the rejected one
    accept_prob: tuple[float, ...] = ()  # min(1, p_i(x_i) / q_i(x_i)) per drafted position
    p_x: tuple[float, ...] = ()  # p_i(x_i) per drafted position
    q_x: tuple[float, ...] = ()  # q_i(x_i) per drafted position
    top_p: tuple[Top, ...] = ()  # top entries of p_i per drafted position, then of p_{drafted+1}
    top_q: tuple[Top, ...] = ()  # top entries of q_i per drafted position
    next_token: int | None = None  # the corrected, bonus or target token drawn (even when the length cut it)
    next_top: Top = ()  # top entries of the distribution next_token came from: the residual, or p
    # Tree rounds only (empty for a chain): the whole tree and every test of the one-hot rule
    # (tree_accept). In a tree round `drafts` is the accepted path, then the first child rejected at
    # the node the round stopped at (when it had children), so `accepted` counts the path.
    tree_tokens: tuple[int, ...] = ()  # [n] each node's proposed token
    tree_parents: tuple[int, ...] = ()  # [n] each node's parent node, -1 for a child of the root
    tree_scores: tuple[float, ...] = ()  # [n] the drafter's score: cumulative log q, or the lookup match weight
    tree_p: tuple[float, ...] = ()  # [n] p at the node's parent for the node's token
    tree_tested: tuple[int, ...] = ()  # the nodes whose coin was looked at, in test order
    tree_u: tuple[float, ...] = ()  # per tested node: its uniform (accepted when u < tree_accept_prob)
    tree_accept_prob: tuple[float, ...] = ()  # per tested node: p'(x), p renormalised after earlier rejected siblings
    tree_residual: tuple[float, ...] = ()  # per tested node: the mass of p (at the parent) left once x is zeroed too
    tree_path: tuple[int, ...] = ()  # the accepted nodes, the root's child first

    @property
    def tree_nodes(self) -> int:
        """Nodes verified in this round's one target pass (0 for a chain round)."""
        return len(self.tree_tokens)

    @property
    def verified(self) -> int:
        """Tokens through this round's verify pass: a tree's nodes (a chain's drafts), plus the root's row."""
        return (self.tree_nodes if self.tree_tokens else self.drafted) + 1

    @property
    def decisions(self) -> tuple[bool, ...]:
        """The accept decision per tested position: u_i < min(1, p_i/q_i), exactly as the engine compared."""
        return tuple(u < a for u, a in zip(self.u, self.accept_prob, strict=False))


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishedEvent:
    reason: str  # "eos" | "length" | "cancelled" | "context"
    prompt_tokens: int
    new_tokens: int
    rounds: int
    elapsed: float  # wall seconds from the first round to the end
    token_ids: tuple[int, ...]  # the emitted ids, EOS included when it ended the answer


Event = TokenEvent | RoundEvent | FinishedEvent
