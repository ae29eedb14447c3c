"""Choose the drafter for a loaded target from what was measured on this machine.

The candidates are timed (timing.py: the target's verify pass v(n) and a short probe of each drafter
for c and α), or read from the target's machine profile (machine_profile.py: one cached entry, reused
while its rule holds), and the policy picks the fastest predicted, or target-only. No Qt here.
"""

from __future__ import annotations

import gc
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch

from app.drafting.drafts import make_drafter, template_tokens
from app.drafting.reasons import choice_reason, describe, limit_text, worded
from app.drafting.registry import (
    AUTO,
    NO_DRAFT,
    PROMPT_LOOKUP,
    SUFFIX,
    TRAINED_DRAFT,
    auto_candidates,
    spec_title,
)
from app.drafting.timing import measure_rounds, measure_verify, probe, probe_ids
from app.drafting.tree_probe import verify_tokens, with_tree, with_tree_costs
from app.engine import DecodeParams
from app.engine.gated_lookup import GatedLookupDrafter
from app.engine.lookup_else import LookupElseDrafter
from app.engine.policy import (
    AUTO_GAMMA_MAX,
    MARGIN,
    Choice,
    DrafterProfile,
    Option,
    VerifyCosts,
    best_draft_gamma,
    best_gamma,
    choose,
    limit_of,
    worth_proposing,
)
from app.engine.suffix_drafter import SuffixDrafter
from app.errors import LoadCancelled, ModelError
from app.machine import cost_cache
from app.machine import load as machine_load
from app.machine import profile as machine_profile
from app.machine.baseline import target_steps
from app.machine.clock import now
from app.machine.profile import DrafterTiming, MachineProfile, VerifyTiming
from app.models.loading import LoadedModel
from app.models.progress import LoadProgress, ProgressCallback, ignore_progress

if TYPE_CHECKING:
    from app.engine.protocols import AnyDrafter, Drafter, LiveController

class MeasurementCancelled(LoadCancelled):
    """The cancel flag was set while drafters were being timed (the app is closing)."""


@dataclass(frozen=True)
class Calibration:
    verify: VerifyCosts
    profiles: tuple[DrafterProfile, ...]
    cached: bool  # read from the cache file, nothing timed
    seconds: float  # time spent measuring (0 when cached)
    device: str  # "CPU", "CUDA", "MPS": for the reasons shown to people
    match: float = 0.0  # seconds the per-round lookup takes to find a round's match (VerifyTiming.match)


@dataclass
class Selection:
    """The drafter chosen for a target (None: target-only), with the measurements behind it."""

    drafter: AnyDrafter | None
    spec: str  # the chosen draft spec; "none" for target-only
    choice: Choice
    calibration: Calibration

    def profile(self) -> DrafterProfile | None:
        return next((p for p in self.calibration.profiles if p.name == self.spec), None)

    def auto_gamma(self, gamma_max: int = AUTO_GAMMA_MAX) -> LiveController | None:
        """The chosen drafter's live γ controller (its own `controller`: a chosen tree keeps its measured
        size), from the profile measured for it; None for target-only."""
        profile = self.profile()
        if self.drafter is None or profile is None:
            return None
        return self.drafter.controller(profile, self.calibration.verify, gamma_max)


def device_label(device: torch.device) -> str:
    return {"cpu": "CPU", "cuda": "GPU", "mps": "Mac GPU"}.get(device.type, device.type)


def candidate_specs(target: LoadedModel) -> list[str]:
    """Drafters worth timing for this target: what the registry's kinds that auto weighs name for it
    (app.drafting.registry.auto_candidates: its trained drafts, the embedded model for a larger target of the
    same family, a reduced self-draft for small targets, and prompt lookup)."""
    return auto_candidates(target)


# How the chosen drafter runs: select's decision table, the first row that holds.
BY_HAND = "by hand"  # a spec other than auto: that drafter as asked, whatever it is predicted at
LOOKUP_ELSE = "lookup else"  # lookup where a match pays, else the draft that pays best beside it
PER_ROUND = "per round"  # lookup decided per round, where auto would run lookup alone or target-only
MEASURED = "measured"  # policy.choose's choice as it is: a drafter's chain or tree, or target-only


def select(
    target: LoadedModel, spec: str = AUTO, *, gamma_max: int = AUTO_GAMMA_MAX, progress: ProgressCallback | None = None,
    use_cache: bool = True, cancel=None, tree: bool | None = None, remeasure: bool = False, **load_kwargs,
) -> Selection:
    """spec "auto": time every candidate and keep the fastest (or none); any other spec: time that one
    drafter (for the live γ) and keep it even when it is predicted slower, saying so in the choice.
    remeasure: time the step and the drafters again whatever the machine profile holds.

    The rule: policy.choose ranks the measured drafters (`ranked`); for auto, lookup (where it was measured)
    adds two options, lookup per round (never slower than target-only) and lookup else a draft; the form is
    the first row of the decision table that holds, and the choice is worded once for that form."""
    report = progress or ignore_progress
    if spec == NO_DRAFT:  # nothing to measure
        cal = Calibration(VerifyCosts((1.0,)), (), True, 0.0, device_label(target.device))
        return Selection(None, NO_DRAFT, Choice(None, 1, 1.0, "target-only (chosen by hand)"), cal)
    specs = candidate_specs(target) if spec == AUTO else [spec]
    cal, built = calibrate(target, specs, gamma_max=gamma_max, progress=report, use_cache=use_cache,
                           skip_failures=spec == AUTO, cancel=cancel, remeasure=remeasure, **load_kwargs)
    profile = target.profile
    lookup = next((p for p in cal.profiles if p.name == PROMPT_LOOKUP), None)
    overhead = cal.match / cal.verify.step if lookup is not None else 0.0  # in target steps
    priced = cal  # what the choice weighs: every round pays for its match, whether it proposes or not
    if overhead > MATCH_FREE:
        assert lookup is not None
        lookup = replace(lookup, c_round=max(lookup.c_round, overhead))
        priced = replace(cal, profiles=tuple(lookup if p.name == PROMPT_LOOKUP else p for p in cal.profiles))
    ranked = choose(priced.profiles, cal.verify, gamma_max, device=cal.device, tree=tree)
    lookup = lookup if spec == AUTO else None
    per_round = _per_round_option(ranked, lookup, priced, gamma_max, overhead)
    mixed = _lookup_else_option(lookup, priced, gamma_max) if tree is not True else None
    form = (BY_HAND if spec != AUTO
            else LOOKUP_ELSE if mixed is not None and _beats(mixed, ranked, per_round)
            else PER_ROUND if per_round is not None
            else MEASURED)
    gated = _per_round(target, cal, lookup) if lookup is not None and form in (PER_ROUND, LOOKUP_ELSE) else None
    choice = _choice(form, spec, ranked, lookup, per_round, mixed, gated)
    chain = _chain(None if form == PER_ROUND else choice.drafter, built, target, report, **load_kwargs)
    drafter = _drafter(form, choice, chain, gated, lookup)
    if use_cache and target.profile is not None and target.profile != profile:  # the chosen self-draft timed its kernels
        machine_profile.write(target.profile)
    return Selection(drafter, choice.drafter or NO_DRAFT, choice, cal)


def _choice(form: str, spec: str, ranked: Choice, lookup: DrafterProfile | None, per_round: Option | None,
            mixed: Option | None, gated: AnyDrafter | None) -> Choice:
    """The choice for the form select took, worded once. ranked: policy.choose's (its options are every
    measured drafter's best, fastest first); per_round and mixed: lookup's two forms where auto offers them;
    gated: the per-round lookup built for them (named in the reason when it reads the suffix index too)."""
    if form == BY_HAND:  # kept, but the choice still says whether it pays
        assert ranked.options  # the one drafter asked for was timed (it raises where it cannot be built)
        option = ranked.options[0]
        reason = (f"{option.label} is predicted at {option.predicted:.2f}× target-only because "
                  f"{limit_text(option.limit)}" if ranked.target_only else choice_reason(ranked))
        return Choice(spec, option.gamma, option.predicted, reason, ranked.options, option.nodes, ranked.device)
    if form == LOOKUP_ELSE:
        assert mixed is not None and lookup is not None
        reason = (f"{describe(mixed)}: predicted {mixed.predicted:.2f}× target-only (each round, lookup where a "
                  f"match is predicted to beat a draft round, at a live α from {lookup.alpha:.2f}; else the draft)")
        return Choice(mixed.name, mixed.gamma, mixed.predicted, reason, (mixed, *ranked.options),
                      device=ranked.device)
    if form == PER_ROUND:
        assert per_round is not None and lookup is not None
        name = SuffixDrafter.name if isinstance(gated, SuffixDrafter) else lookup.label  # it reads the index too
        reason = (f"{name}, decided per round: it proposes where a match is predicted to pay "
                  f"(α {lookup.alpha:.2f}), else a target-only step"
                  + (f" ({choice_reason(ranked)})" if ranked.target_only else ""))
        return Choice(PROMPT_LOOKUP, per_round.gamma, per_round.predicted, reason, ranked.options,
                      device=ranked.device)
    return worded(ranked)


def _chain(spec: str | None, built: dict[str, Drafter], target: LoadedModel, report: ProgressCallback,
           **load_kwargs) -> Drafter | None:
    """The chain drafter `spec` names (None, "none": no drafter): the one built while timing where there is
    one, else built now; the others built while timing are let go."""
    chain = built.pop(spec, None) if spec else None
    if built:  # the others' memory back now; a cached choice built none (a needless collect took 0.32 s)
        built.clear()
        gc.collect()
    if chain is None and spec and spec != NO_DRAFT:
        report(LoadProgress("draft", 0.95, f"loading the chosen draft {spec}"))
        chain = make_drafter(spec, target, progress=report, **load_kwargs)
    return chain


def _drafter(form: str, choice: Choice, chain: Drafter | None, gated: GatedLookupDrafter | None,
             lookup: DrafterProfile | None) -> AnyDrafter | None:
    """What runs the choice: the per-round lookup; lookup else the chosen chain; the chain's tree form where
    the choice is a tree; else the chain (None: target-only)."""
    if form == PER_ROUND:
        return gated
    if form == LOOKUP_ELSE and chain is not None and gated is not None and lookup is not None:
        return LookupElseDrafter(gated, chain, choice.gamma, lookup)
    if choice.tree and chain is not None:
        return chain.tree_form(choice.nodes, choice.gamma)
    return chain


def _per_round_option(ranked: Choice, lookup: DrafterProfile | None, cal: Calibration,
                      gamma_max: int, overhead: float = 0.0) -> Option | None:
    """Lookup decided per round (GatedLookupDrafter), where auto would run lookup's chain alone or target-only
    and lookup at its measured α, on a full match, beats a target step (else no round would propose): a
    proposal costs nothing, so each round decides from v(n) and lookup's α whether its match is worth
    verifying, and a round without one is a plain target step: never predicted slower than target-only."""
    if (lookup is None or ranked.tree or ranked.drafter not in (None, PROMPT_LOOKUP)
            or worth_proposing(gamma_max, lookup.alpha, cal.verify) <= 0):
        return None
    option = next(o for o in ranked.options if o.name == PROMPT_LOOKUP)
    # A round without a proposal is a target step plus its match: never slower only where matching is free.
    floor = 1.0 if overhead <= MATCH_FREE else 1.0 / (1.0 + overhead)
    predicted = max(floor, option.predicted)
    return replace(option, predicted=predicted) if predicted >= 1.0 else None


def _lookup_else_option(lookup: DrafterProfile | None, cal: Calibration, gamma_max: int) -> Option | None:
    """Lookup where a match is predicted to pay, else a draft (LookupElseDrafter), for the draft whose chain
    alone is predicted faster than target-only (else lookup's per-round fallback, a target step, is the
    faster one) that is predicted fastest beside lookup, from the measured costs (lookup's coverage and α,
    the draft's c and α, v(n)). It never predicts below the draft alone: a lookup round is only proposed
    where it beats a draft round, and the live α (learned from every match, proposed or not) moves that per
    answer; live, the draft is also turned off where it is slower than a target step (LookupElseGamma)."""
    if lookup is None:
        return None
    best = None
    for draft in cal.profiles:
        if draft.name == PROMPT_LOOKUP or best_gamma(draft, cal.verify, gamma_max)[1] <= 1.0:
            continue
        gamma, predicted = best_draft_gamma(lookup, draft, cal.verify, gamma_max)
        if best is None or predicted > best[2]:
            best = (draft, gamma, predicted)
    if best is None:
        return None
    draft, gamma, predicted = best
    return Option(draft.name, f"prompt lookup, else {draft.label}", gamma, predicted,
                  limit_of(draft, gamma, cal.verify, cal.device))


def _beats(mixed: Option, ranked: Choice, per_round: Option | None) -> bool:
    """Whether lookup-else is taken: beside lookup per round (never slower than target-only) it only has to be
    faster; otherwise it must be at least as fast as the ranked choice and beat target-only by MARGIN, as any
    drafter must."""
    if per_round is not None:
        return mixed.predicted > per_round.predicted + 1e-9
    return mixed.predicted >= max(MARGIN, ranked.predicted - 1e-9)


# A per-round match that costs under this share of a target step is left out of the prediction (a 1.5B step of
# 28 ms against ~0.2 ms of matching); above it, it is priced, and lookup per round is kept only where its matches
# are predicted to win back what matching costs every round (lookup's c_round; the embedded model's 2.8 ms step:
# matching cost 0.24 ms a round live, and auto per round ran 0.89x target-only on chat-heldout).
MATCH_FREE = 0.01
MATCH_TIMING_ALPHA = 0.5  # the per-round lookup whose matching is timed: any α, its proposals are thrown away


def _per_round(target: LoadedModel, cal: Calibration, lookup: DrafterProfile) -> GatedLookupDrafter:
    """Lookup decided per round, as auto runs it, from lookup's measured α (`per_round_lookup`)."""
    return per_round_lookup(target, cal.verify, lookup.alpha)


def per_round_lookup(target: LoadedModel, verify: VerifyCosts, alpha: float) -> GatedLookupDrafter:
    """Lookup decided per round: over the context and the suffix index of the model's own answers and the
    user's chats (suffix decoding); plain prompt lookup where the index cannot be built."""
    from app.drafting.suffix_corpus import suffix_drafter

    try:
        return suffix_drafter(SUFFIX, target, verify, alpha)
    except (OSError, ValueError, KeyError):  # no corpus: the context alone
        return GatedLookupDrafter(verify, alpha, never=template_tokens(target))


def calibrate(
    target: LoadedModel, specs: list[str], *, gamma_max: int = AUTO_GAMMA_MAX, progress: ProgressCallback | None = None,
    use_cache: bool = True, skip_failures: bool = False, cancel=None, remeasure: bool = False, **load_kwargs,
) -> tuple[Calibration, dict[str, Drafter]]:
    """(calibration, the drafters built while measuring, by spec). What the target's machine profile holds
    and may still use is not timed again, and a drafter read from it is not built. skip_failures: a
    candidate that cannot be built (damaged, made for another target) is left out. The profile, with what
    was timed, is the target's afterwards (and cached)."""
    report = progress or ignore_progress
    label = device_label(target.device)
    current = _profile_of(target)
    stored = machine_profile.read(current.key) if use_cache else None
    if stored is not None and not machine_profile.measured_under(stored, current):
        stored = None  # timed on another kernel path or thread count than the one that runs
    reuse = machine_profile.Reuse(stored, remeasure=remeasure)
    if reuse.stored is None:  # everything is timed again, the self-draft's kernel path too (drafts.self_draft)
        current = target.profile = replace(current, draft_kernels=None)
    n_max = verify_tokens(gamma_max)
    verify = reuse.part("verify")
    if verify is not None and len(verify.costs.seconds) < n_max:
        verify = None  # a longer pass is asked for than was timed
    # Drafter costs are in target steps of the step timed with them: a new step times them again.
    stored = reuse.stored if verify is not None else None  # the drafters timed with that step
    known = {d.spec: d for d in stored.drafters if reuse.usable(d.load)} if stored is not None else {}
    left_out = set(stored.left_out) if stored is not None else set()
    wanted = {s: cost_cache.spec_fingerprint(s) for s in specs}
    start = now()
    ids = None
    if verify is None:
        ids = probe_ids(target, gamma_max)
        report(LoadProgress("measure", 0.0, "timing the target's verify pass"))
        with machine_load.watch() as watch:
            costs = with_tree_costs(target.model, ids, measure_verify(target.model, ids, n_max))
            loop = target_steps(target, ids, DecodeParams(temperature=0.0), cancel=cancel)
            # the rounds' own work beside the passes, and what the per-round lookup's matching costs in them
            # (its α only cuts its proposals, which the timing throws away)
            round_s, match_s = measure_rounds(target, ids, costs, per_round_lookup(target, costs, MATCH_TIMING_ALPHA))
        verify = VerifyTiming(replace(costs, round=round_s), statistics.median(loop) if loop else None, len(ids),
                              watch.load, match=match_s)
    built: dict[str, Drafter] = {}
    todo = [s for s in specs if wanted[s] not in known and wanted[s] not in left_out]
    for i, spec in enumerate(todo):
        if cancel is not None and cancel.is_set():
            raise MeasurementCancelled
        report(LoadProgress("measure", (i + 0.5) / (len(todo) + 1), f"timing drafter {spec_title(spec)}"))
        try:
            drafter = make_drafter(spec, target, progress=report, **load_kwargs)
        except ModelError:
            if not skip_failures:
                raise
            left_out.add(wanted[spec])
            continue
        if drafter is None:
            left_out.add(wanted[spec])
            continue
        built[spec] = drafter
        ids = probe_ids(target, gamma_max) if ids is None else ids
        with machine_load.watch() as watch:
            profile = with_tree(target, drafter, ids, probe(target, drafter, spec, ids, verify.costs,
                                                            _trained_info(target, spec)), verify.costs)
        known[wanted[spec]] = DrafterTiming(wanted[spec], profile, watch.load)
    timed = not verify.cached or bool(todo)
    seconds = now() - start if timed else 0.0
    profiles = tuple(known[wanted[s]].profile for s in specs if wanted[s] in known)
    # The self-draft built above took its kernel path into target.profile: keep it.
    draft_kernels = target.profile.draft_kernels if target.profile is not None else current.draft_kernels
    target.profile = replace(current, verify=replace(verify, cached=True), drafters=tuple(known.values()),
                             left_out=tuple(sorted(left_out)), draft_kernels=draft_kernels, disputed="")
    if use_cache and timed:
        machine_profile.write(target.profile)
    if timed:
        report(LoadProgress("measure", 1.0, f"measured {len(todo)} drafters in {seconds:.1f} s"))
    return Calibration(verify.costs, profiles, not timed, seconds, label, verify.match), built


def _profile_of(target: LoadedModel) -> MachineProfile:
    """The target's profile as loaded; a model not loaded by load_model is keyed by its weights as they are."""
    if target.profile is None:
        target.profile = MachineProfile(machine_profile.profile_key(target.model, target.device, None),
                                        target=target.name)
    return target.profile


# --- optional sources --------------------------------------------------------------------------
def trained_drafts(target: LoadedModel) -> list:
    """The trained feature drafts made for this target (app.drafting.trained_drafts), best α first."""
    try:
        from app.drafting.trained_drafts import list_trained_drafts
    except ImportError:  # an install without trained-draft support
        return []
    return list_trained_drafts(target)


def _trained_info(target: LoadedModel, spec: str):
    """The trained draft's info (its report's α) for its folder, or for "trained" (the best one, as
    make_drafter picks it)."""
    drafts = trained_drafts(target)
    if spec == TRAINED_DRAFT:
        return drafts[0] if drafts else None
    return next((i for i in drafts if str(i.path) == spec), None)

