"""What the events expose of each acceptance test: the uniform draws, the decisions and top entries.

Step-through views and recordings rebuild a round from these fields alone, so they must agree with
the tokens the same round emitted and with the draws `decide` makes from the same generator.
"""

from __future__ import annotations

import torch

from app.engine import (
    DecodeParams,
    ModelDrafter,
    RoundEvent,
    Status,
    TokenEvent,
    accept,
    acceptance,
    decode,
    logits_to_probs,
    sample,
)


def test_accept_reports_the_uniform_draws_decide_made():
    gen = torch.Generator().manual_seed(11)
    p = logits_to_probs(torch.randn(4, 9, generator=gen), DecodeParams())
    q = logits_to_probs(torch.randn(3, 9, generator=gen), DecodeParams())
    seen = set()
    for seed in range(60):
        x = sample(q, torch.Generator().manual_seed(500 + seed))
        v = accept(p, q, x, torch.Generator().manual_seed(seed))
        n, _, _, _, ratio, _, u = acceptance.decide(p, q, x, torch.Generator().manual_seed(seed))
        tested = min(int(n) + 1, 3)
        assert v.u == tuple(u[:tested].tolist())
        decisions = [a < b for a, b in zip(v.u, v.accept_prob, strict=False)]
        assert decisions == [True] * v.n_accepted + [False] * (tested - v.n_accepted)
        assert len(v.top_p) == 4 and len(v.top_q) == 3
        for row, dist in zip(v.top_p, p, strict=True):
            assert [i for i, _ in row] == torch.topk(dist, 5).indices.tolist()
        seen.add(v.n_accepted)
    assert {0, 3} <= seen  # both a rejection and a bonus round were checked


def test_round_events_carry_the_test_of_every_drafted_position(vocab34_pair):
    target, draft = vocab34_pair
    events = list(decode(target, torch.tensor([5, 9, 12]), ModelDrafter(draft),
                         DecodeParams(gamma=4, temperature=1.0, max_new_tokens=60, seed=3)))
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    kinds = set()
    for r in rounds:
        mine = [t for t in tokens if t.round == r.round]
        assert len(r.drafts) == r.drafted and len(r.accept_prob) == len(r.p_x) == len(r.q_x) == r.drafted
        assert len(r.top_p) == r.drafted + 1 and len(r.top_q) == r.drafted
        rejected = r.accepted < r.drafted
        assert len(r.u) == r.accepted + rejected
        assert r.decisions == (True,) * r.accepted + (False,) * rejected
        assert all(0.0 <= u < 1.0 for u in r.u)
        for t in mine:
            if t.status in (Status.ACCEPTED, Status.REJECTED):
                assert t.token_id == r.drafts[t.position]
                assert (t.u, t.accept_prob) == (r.u[t.position], r.accept_prob[t.position])
            else:
                assert t.u is None and t.token_id == r.next_token
                if t.status is Status.CORRECTED:
                    assert t.top.residual == r.next_top and t.top.p == r.top_p[r.accepted]
        # The residual has no mass where q >= p, so its top entries avoid the rejected draft.
        if rejected:
            assert r.drafts[r.accepted] not in [i for i, _ in r.next_top]
            kinds.add("rejection")
        elif r.bonus:
            kinds.add("bonus")
    assert kinds == {"rejection", "bonus"}
