"""Timing on this machine: the target's verify pass v(n), and a short greedy probe of one drafter (c, α).

Other processes only ever add time, so every cost is the minimum over repetitions (the uncontended
cost: clock.time_interleaved), and v(n) is made non-decreasing in n. No Qt here.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import torch

from app.engine import DecodeParams, Drafter, RoundEvent, decode, generate
from app.engine.drafters import PromptLookupDrafter
from app.engine.kv import context_limit, forward, length, new_cache, rollback
from app.engine.policy import DrafterProfile, VerifyCosts
from app.machine.clock import now, time_interleaved
from app.models.loading import LoadedModel

PROBE = [{"role": "user", "content": "In a few sentences, explain how a bicycle stays upright."}]
# A chat a few turns in: drafter costs are timed at this context, not at an empty one. The bf16 self-draft
# measured 1.08x target-only after 60 tokens of context and 0.49x after 400 (its attention slows with
# context far faster than the float32 target's), so a short probe chose a drafter that lost in real chats.
_EARLIER = (
    "Bicycles, trains and boats each solve the same problem in a different way: keeping a load moving with "
    "as little effort as possible. A bicycle uses the rider's legs, a chain and two wheels; a train uses steel "
    "wheels on steel rails, where rolling resistance is tiny; a boat pushes water aside and pays for it in "
    "drag that grows quickly with speed. Which one is best depends on the distance, the load and the route. "
) * 3
PROBE_LONG = [
    {"role": "user", "content": "Compare bicycles, trains and boats as ways to move people and goods."},
    {"role": "assistant", "content": _EARLIER},
    *PROBE,
]
# A code request beside the chat: α is a property of the content as much as of the pair. On the chat alone,
# 16 tokens, Qwen2.5-Coder-0.5B drafting for its 1.5B measured α 0.46 (0.69 over 64 tokens) and 0.98 on this
# request, as on the coding prompts people give that pair (0.88-1.0 live), so auto never weighed it.
PROBE_CODE = [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number "
                                          "iteratively, with a docstring and type hints."}]
PROBE_TOKENS = 32  # per probe chat
PROBE_GAMMA = 4
VERIFY_REPS = 3
TIMED_SIZES = (1, 2, 3, 5, 9, 17)  # timed token counts; v(n) between them is interpolated (it is ~linear)


def probe_ids(target: LoadedModel, gamma_max: int) -> torch.Tensor:
    """The probe chat a few turns in, or the one-question chat where the model's context is too short."""
    ids = target.encode_chat(PROBE_LONG)
    limit = context_limit(target.model)
    if limit is not None and len(ids) + gamma_max + 1 + PROBE_TOKENS + PROBE_GAMMA + 1 > limit:
        return target.encode_chat(PROBE)
    return ids


SHORTER_CONTEXTS = (64, 160)  # v(n) is also timed after these many tokens: a chat's first turns are shorter


def measure_verify(model, ids: torch.Tensor, n_max: int, reps: int = VERIFY_REPS) -> VerifyCosts:
    """v(n) after the probe's context (the reference curve) and after SHORTER_CONTEXTS of it (by_context), so a
    round is priced at its own context (VerifyCosts.at)."""
    costs = _measure_at(model, ids, n_max, reps)
    shorter = tuple((n, _measure_at(model, ids[: n + 1], n_max, reps).seconds)
                    for n in SHORTER_CONTEXTS if n + 1 < len(ids))
    return replace(costs, by_context=shorter, context=len(ids) - 1)


@torch.inference_mode()
def _measure_at(model, ids: torch.Tensor, n_max: int, reps: int = VERIFY_REPS) -> VerifyCosts:
    """v(n) for n = 1..n_max in seconds (head on every row) after ids[:-1], timed at TIMED_SIZES and n_max,
    interleaved over reps, interpolated between; and one head row's seconds from the n_max pass with one row
    against all rows."""
    device = next(model.parameters()).device
    ids = ids.to(device)
    cache = new_cache(model)
    forward(model, cache, ids[:-1], keep=1)
    held = length(model, cache)
    timed = sorted({n for n in TIMED_SIZES if n < n_max} | {n_max})
    sizes = [(n, n) for n in timed] + [(n_max, 1)]
    fresh = {n: ids[-1:].repeat(n) for n, _ in sizes}
    runs = {(n, keep): (lambda n=n, keep=keep: forward(model, cache, fresh[n], keep=keep)) for n, keep in sizes}
    best = time_interleaved(runs, reps=reps, device=device, after=lambda _k: rollback(cache, held)).best
    points, floor = [], 0.0
    for n in timed:  # more tokens never cost less: what looks cheaper is noise
        floor = max(floor, best[n, n])
        points.append((n, floor))
    seconds = tuple(_interpolate(points, n) for n in range(1, n_max + 1))
    head = max(0.0, (best[n_max, n_max] - best[n_max, 1]) / max(n_max - 1, 1))
    return VerifyCosts(seconds, head)


def _interpolate(points: list[tuple[int, float]], n: int) -> float:
    for (n0, s0), (n1, s1) in zip(points, points[1:], strict=False):
        if n0 <= n <= n1:
            return s0 + (s1 - s0) * (n - n0) / (n1 - n0)
    return points[0][1]


def probe(target: LoadedModel, drafter: Drafter, spec: str, ids: torch.Tensor, verify: VerifyCosts,
          info=None) -> DrafterProfile:
    """c, α and coverage of one drafter from two short greedy runs of the real loop (prefill rounds excluded):
    the chat probe `ids`, at a chat's depth, for c (drafter costs grow with context), and a code request on its
    own, for α beside the chat's (a second long prefill of both models would cost seconds and α does not need
    it); and its per-round cost c_round from a third run at γ 1 (a round's first token may cost more than the
    others: a draft whose weights the target's pass evicts reads them again then).
    info: the drafter's TrainedDraftInfo, whose report measured α on far more tokens than this probe."""
    params = DecodeParams(gamma=PROBE_GAMMA, temperature=0.0, max_new_tokens=PROBE_TOKENS, seed=0)
    chat, code = ([r for r in generate(target.model, prompt, drafter, params, vocab_size=target.vocab_size).rounds[1:]]
                  for prompt in (ids, target.encode_chat(PROBE_CODE)))
    rounds = chat + code
    drafted = [r for r in rounds if r.drafted]
    tested = sum(min(r.drafted, r.accepted + 1) for r in drafted)
    accepted = sum(r.accepted for r in drafted)
    # Uncontended costs on both sides: the fastest drafted token at the chat's depth against the fastest step.
    timed = [r for r in chat if r.drafted] or drafted
    c = min(r.draft_time / r.drafted for r in timed) / verify.step if drafted else 0.0
    c_round = _round_cost(target, drafter, ids, c * verify.step) / verify.step if drafted else 0.0
    alpha = accepted / tested if tested else 0.0
    per_position: tuple[float, ...] = ()
    label = getattr(drafter, "name", spec)
    if info is not None:  # the report measured α on held-out prompts: far more tokens than this probe
        label = info.name
        alpha = info.alpha_greedy if info.alpha_greedy is not None else alpha
        greedy = (info.report.get("evaluation", info.report).get("by_temperature", {}) or {}).get("greedy", {})
        per_position = tuple(a for a in greedy.get("per_position_acceptance", []) if a is not None)
    coverage = len(drafted) / len(rounds) if rounds else 0.0
    return DrafterProfile(spec, label, c, alpha, per_position, coverage, c_round=c_round)


def _round_cost(target: LoadedModel, drafter: Drafter, ids: torch.Tensor, token_s: float) -> float:
    """Seconds a one-token round's draft takes beyond one drafted token at PROBE_GAMMA's pace (the fastest
    such round, as c is the fastest token); 0 where it takes no more."""
    params = DecodeParams(gamma=1, temperature=0.0, max_new_tokens=PROBE_TOKENS // 2, seed=0)
    rounds = [r for r in generate(target.model, ids, drafter, params, vocab_size=target.vocab_size).rounds[1:]
              if r.drafted]
    return max(0.0, min(r.draft_time for r in rounds) - token_s) if rounds else 0.0


# Proposal lengths the calibration rounds take in turn: none and one. A round's own work was about the same for 1
# to 3 proposed tokens on the embedded model (0.31, 0.31 and 0.38 ms), and beside one token the bare passes differ
# least, so a machine that slows between the bare passes and the rounds is least read as round work (with 4
# tokens, a 10% slower minute read as 0.16 ms of it).
ROUND_KINDS = (0, 1)
ROUND_REPS = 24  # neighbouring pairs of rounds (the engine's 1-token increment read 0.32-0.58 ms on the embedded model)


class _CalibrationRounds(PromptLookupDrafter):
    """Rounds of the real loop whose proposals take ROUND_KINDS' lengths in turn (the last token repeated: mostly
    rejected, and a rejection's cut is part of what a round costs), each also timing the per-round drafter
    `inner`'s own proposal, as it runs: between target passes."""

    name = "calibration rounds"

    def __init__(self, inner: PromptLookupDrafter | None) -> None:
        super().__init__()
        self.inner = inner
        self.inner_s: list[float] = []  # per round, round 0 (the prefill's) first
        self.turn = 0

    def propose(self, ids_list: list[int], gamma: int) -> list[int]:
        if self.inner is not None:
            start = now()
            self.inner.propose(ids_list, gamma)
            self.inner_s.append(now() - start)
        kind = ROUND_KINDS[self.turn % len(ROUND_KINDS)]
        self.turn += 1
        return [ids_list[-1]] * min(kind, gamma)


def measure_rounds(target: LoadedModel, ids: torch.Tensor, costs: VerifyCosts,
                   inner: PromptLookupDrafter | None = None) -> tuple[float, float]:
    """(VerifyCosts.round, the per-round drafter's seconds a round) from the engine's own rounds after `ids`:
    what a round that verifies one proposed token costs beyond the round before it, which proposed nothing (the
    median over ROUND_REPS such neighbours, so the machine's drift between minutes cancels), less what the bare
    passes differ by (0 where too few ran); and the median of `inner`'s proposals (0 without one)."""
    drafter = _CalibrationRounds(inner)
    params = DecodeParams(gamma=max(ROUND_KINDS), temperature=0.0, max_new_tokens=3 * ROUND_REPS * len(ROUND_KINDS),
                          seed=0)
    spent: list[tuple[int, float]] = []  # (rows verified, seconds) per round, in order
    for e in decode(target.model, ids, drafter, params, vocab_size=target.vocab_size):
        if not isinstance(e, RoundEvent) or e.round == 0:
            continue
        own = e.draft_time - (drafter.inner_s[e.round] if inner is not None else 0.0)  # the proposal's tensors
        spent.append((e.drafted + 1, e.verify_time + max(own, 0.0)))
        if len(spent) >= ROUND_REPS * len(ROUND_KINDS) + 1:
            break
    extra = [b - a for (n, a), (m, b) in zip(spent, spent[1:], strict=False) if n == 1 and m == 2]
    bare = costs.seconds[1] - costs.seconds[0] if len(costs.seconds) > 1 else 0.0
    round_s = max(0.0, statistics.median(extra) - bare) if len(extra) >= 3 else 0.0
    match_s = statistics.median(drafter.inner_s[1:]) if len(drafter.inner_s) > 1 else 0.0
    return round_s, match_s
