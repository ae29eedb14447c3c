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
from app.drafting.reasons import describe, limit_text, worded
from app.drafting.registry import (
    AUTO,
    NO_DRAFT,
    PROMPT_LOOKUP,
    SUFFIX,
    TRAINED_DRAFT,
    auto_candidates,
    spec_title,
)
from app.drafting.timing import measure_verify, probe, probe_ids
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


def select(
    target: LoadedModel, spec: str = AUTO, *, gamma_max: int = AUTO_GAMMA_MAX, progress: ProgressCallback | None = None,
    use_cache: bool = True, cancel=None, tree: bool | None = None, remeasure: bool = False, **load_kwargs,
) -> Selection:
    """spec "auto": time every candidate and keep the fastest (or none); any other spec: time that one
    drafter (for the live γ) and keep it even when it is predicted slower, saying so in the choice.
    remeasure: time the step and the drafters again whatever the machine profile holds."""
    report = progress or ignore_progress
    if spec == NO_DRAFT:
        cal = Calibration(VerifyCosts((1.0,)), (), True, 0.0, device_label(target.device))
        return Selection(None, NO_DRAFT, Choice(None, 1, 1.0, "target-only (chosen by hand)"), cal)
    specs = candidate_specs(target) if spec == AUTO else [spec]
    cal, built = calibrate(target, specs, gamma_max=gamma_max, progress=report, use_cache=use_cache,
                           skip_failures=spec == AUTO, cancel=cancel, remeasure=remeasure, **load_kwargs)
    profile = target.profile
    choice = worded(choose(cal.profiles, cal.verify, gamma_max, device=cal.device, tree=tree))
    lookup = next((p for p in cal.profiles if p.name == PROMPT_LOOKUP), None)
    # Lookup at its measured α, on a full match, must beat a target step, or no round would propose.
    per_round = (spec == AUTO and lookup is not None and not choice.tree and choice.drafter in (None, PROMPT_LOOKUP)
                 and worth_proposing(gamma_max, lookup.alpha, cal.verify) > 0)
    if per_round:
        assert lookup is not None
        choice = _per_round_lookup(choice, lookup)
    mixed = (_lookup_else(choice, cal, lookup, gamma_max, per_round)
             if spec == AUTO and lookup is not None and tree is not True else None)
    if mixed is not None:
        choice, per_round = mixed, False
    if spec != AUTO:  # chosen by hand: keep it, but the choice still says whether it pays
        option = choice.options[0] if choice.options else None
        gamma = option.gamma if option else 1
        predicted = option.predicted if option else 1.0
        reason = choice.reason
        if choice.target_only:
            assert option is not None  # the one drafter asked for was timed (it raises where it cannot be built)
            reason = f"{option.label} is predicted at {predicted:.2f}× target-only because {limit_text(option.limit)}"
        choice = Choice(spec, gamma, predicted, reason, choice.options, option.nodes if option else 0)
    chosen = choice.drafter or NO_DRAFT
    chain = _per_round(target, cal, lookup) if per_round and lookup else built.pop(chosen, None)
    if isinstance(chain, SuffixDrafter):  # the per-round lookup also reads the index: say so
        choice = replace(choice, reason=choice.reason.replace(lookup.label, SuffixDrafter.name, 1) if lookup else choice.reason)
    if built:  # the others' memory back now; a cached choice built none (a needless collect took 0.32 s)
        built.clear()
        gc.collect()
    if chain is None and chosen != NO_DRAFT:
        report(LoadProgress("draft", 0.95, f"loading the chosen draft {chosen}"))
        chain = make_drafter(chosen, target, progress=report, **load_kwargs)
    drafter: AnyDrafter | None = chain
    if choice.tree and chain is not None:
        drafter = chain.tree_form(choice.nodes, choice.gamma)
    if mixed is not None and chain is not None and lookup is not None:
        drafter = LookupElseDrafter(_per_round(target, cal, lookup), chain, choice.gamma, lookup)
    if use_cache and target.profile is not None and target.profile != profile:  # the chosen self-draft timed its kernels
        machine_profile.write(target.profile)
    return Selection(drafter, chosen, choice, cal)


def _per_round(target: LoadedModel, cal: Calibration, lookup: DrafterProfile) -> GatedLookupDrafter:
    """Lookup decided per round, as auto runs it: over the context and the suffix index of the model's own
    answers and the user's chats (suffix decoding), from lookup's measured α; plain prompt lookup where the
    index cannot be built."""
    from app.drafting.suffix_corpus import suffix_drafter

    try:
        return suffix_drafter(SUFFIX, target, cal.verify, lookup.alpha)
    except (OSError, ValueError, KeyError):  # no corpus: the context alone
        return GatedLookupDrafter(cal.verify, lookup.alpha, never=template_tokens(target))


def _lookup_else(choice: Choice, cal: Calibration, lookup: DrafterProfile, gamma_max: int,
                 per_round: bool) -> Choice | None:
    """Lookup where a match is predicted to pay, else a draft (LookupElseDrafter), for a draft whose chain is
    predicted faster than target-only (else lookup's per-round fallback, a target step, is the faster one):
    the choice when its prediction from the measured costs (lookup's coverage and α, the draft's c and α,
    v(n)) is at least `choice`'s and beats target-only by MARGIN, or beats lookup per round (`per_round`:
    `choice` is lookup alone, never slower than target-only). It never predicts below the draft alone:
    a lookup round is only proposed where it beats a draft round, and the live α (learned from every
    match, proposed or not) moves that per answer; live, the draft is also turned off where it is slower
    than a target step (LookupElseGamma)."""
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
    # Beside lookup per round (never slower than target-only) it only has to be faster; otherwise it must
    # also beat target-only by MARGIN, as any drafter must.
    if not (predicted > choice.predicted + 1e-9 if per_round else predicted >= max(MARGIN, choice.predicted - 1e-9)):
        return None
    option = Option(draft.name, f"prompt lookup, else {draft.label}", gamma, predicted,
                    limit_of(draft, gamma, cal.verify, cal.device))
    reason = (f"{describe(option)}: predicted {predicted:.2f}× target-only (each round, lookup where a match is "
              f"predicted to beat a draft round, at a live α from {lookup.alpha:.2f}; else the draft)")
    return Choice(draft.name, gamma, predicted, reason, (option, *choice.options))


def _per_round_lookup(choice: Choice, lookup: DrafterProfile) -> Choice:
    """Auto with lookup rather than target-only: a proposal costs nothing, so each round decides from v(n)
    and lookup's α whether its match is worth verifying (GatedLookupDrafter), and a round without one is
    a plain target step: never predicted slower than target-only."""
    option = next((o for o in choice.options if o.name == PROMPT_LOOKUP), None)
    predicted = max(1.0, option.predicted if option else 1.0)
    reason = (f"{lookup.label}, decided per round: it proposes where a match is predicted to pay "
              f"(α {lookup.alpha:.2f}), else a target-only step")
    if choice.target_only:
        reason += f" ({choice.reason})"
    return Choice(PROMPT_LOOKUP, option.gamma if option else 1, predicted, reason, choice.options)


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
        verify = VerifyTiming(costs, statistics.median(loop) if loop else None, len(ids), watch.load)
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
    return Calibration(verify.costs, profiles, not timed, seconds, label), built


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

