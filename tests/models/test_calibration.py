"""Measuring drafters per machine and pair: the choice follows injected costs, the cache is keyed and
invalidated, and a damaged cache file only means measuring again. No timing asserts."""

from __future__ import annotations

import json

import pytest
import torch

from app.drafting import auto as calibration
from app.drafting.auto import AUTO, calibrate, candidate_specs, select
from app.engine.policy import TREE_NODES_MAX, DrafterProfile, VerifyCosts
from app.machine import cost_cache
from app.models import load_model


@pytest.fixture(scope="module")
def target(tiny_pair_dirs):
    return load_model(str(tiny_pair_dirs[0]), device="cpu")


def test_auto_measures_every_candidate_then_reads_the_cache(target, monkeypatch):
    assert candidate_specs(target) == ["self", "prompt-lookup"]  # tiny: no trained draft, no embedded pair
    first = select(target, AUTO)
    cal = first.calibration
    assert not cal.cached and len(cal.verify.seconds) == TREE_NODES_MAX + 1  # chains up to 17, trees up to 33
    assert {p.name for p in cal.profiles} == {"self", "prompt-lookup"}
    for p in cal.profiles:
        assert p.c >= 0 and 0 <= p.alpha <= 1 and 0 <= p.coverage <= 1
        # Both have a tree form: E[accepted] per node budget never falls as nodes are added.
        assert len(p.tree_accepted) == TREE_NODES_MAX and p.tree_c >= 0
        assert all(b >= a - 1e-12 for a, b in zip(p.tree_accepted, p.tree_accepted[1:], strict=False))
    assert first.choice.reason
    assert (first.drafter is None) == first.choice.target_only
    monkeypatch.setattr(calibration, "measure_verify", lambda *a, **k: pytest.fail("cache not used"))
    again = select(target, AUTO)
    assert again.calibration.cached and again.calibration.profiles == cal.profiles
    assert again.spec == first.spec


def test_auto_candidates_come_from_the_registry_in_the_same_order(target, monkeypatch):
    """Each kind auto weighs names its candidates in the registry (AutoRule): trained drafts, the embedded model
    for a larger target that shares its tokenizer, the self-draft of a small target, prompt lookup, in that
    order; a kind registered with a rule is weighed too, at its rank."""
    from app.drafting import drafts
    from app.drafting.registry import AutoRule, DraftKind, register, unregister
    from app.models.embedded import DEFAULT_SPEC

    monkeypatch.setattr(drafts, "embedded_fits", lambda target: True)
    assert candidate_specs(target) == [DEFAULT_SPEC, "self", "prompt-lookup"]
    monkeypatch.setattr(drafts, "SELF_DRAFT_MAX_PARAMS", 0)  # a target too large to copy
    assert candidate_specs(target) == [DEFAULT_SPEC, "prompt-lookup"]
    monkeypatch.setattr(drafts, "embedded_fits", lambda target: False)
    assert candidate_specs(target) == ["prompt-lookup"]
    kind = register(DraftKind("uniform", "toy_drafter:build", auto=AutoRule(35)))
    try:
        assert candidate_specs(target) == ["uniform", "prompt-lookup"]
    finally:
        unregister(kind)
    assert candidate_specs(target) == ["prompt-lookup"]


def _timed_to(n_max: int, seconds: tuple[float, ...]) -> tuple[float, ...]:
    """v(n) timed up to n_max tokens, as measure_verify returns it: past `seconds`, the line VerifyCosts
    extrapolates (so every v(n) is the same as from `seconds` alone)."""
    slope = seconds[-1] - seconds[-2]
    return seconds[:n_max] + tuple(seconds[-1] + slope * k for k in range(1, n_max - len(seconds) + 1))


def _inject(monkeypatch, costs: dict[str, tuple[float, float]]):
    """probe() returns the given (c, alpha) per spec instead of timing: drafters of known cost."""
    monkeypatch.setattr(calibration, "measure_verify", lambda model, ids, n_max, **k: VerifyCosts(
        _timed_to(n_max, (0.050, 0.055, 0.0585, 0.063, 0.0665, 0.072, 0.078, 0.083, 0.089))))
    monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: DrafterProfile(
        spec, spec, *costs[spec]))
    monkeypatch.setattr(calibration, "with_tree", lambda target, drafter, ids, profile, verify: profile)


def test_the_slow_drafter_is_never_picked(target, monkeypatch):
    _inject(monkeypatch, {"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.6)})
    sel = select(target, AUTO, use_cache=False)
    assert sel.spec == "prompt-lookup" and sel.drafter.name == "suffix decoding"  # per-round lookup, with the index
    assert sel.choice.reason.startswith("suffix decoding, decided per round: ")
    assert sel.auto_gamma() is not None and sel.auto_gamma().gamma() == sel.choice.gamma


@pytest.mark.parametrize(("scale", "per_round"), [(1, True), (1 / 500, False)])
def test_per_round_lookup_is_dropped_where_matching_costs_more_than_its_matches_win(target, monkeypatch, scale,
                                                                                   per_round):
    """Lookup whose chain does not pay (under MARGIN) but whose full matches do: run per round beside a 50 ms
    target step; beside
    a 0.1 ms one, finding each round's match costs more than its matches win back, and auto runs target-only."""
    _inject_profiles(monkeypatch, {"self": DrafterProfile("self", "bf16 self-draft", 1.05, 0.98),
                                   "prompt-lookup": DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.3,
                                                                   coverage=0.2)})
    monkeypatch.setattr(calibration, "measure_verify", lambda model, ids, n_max, **k: VerifyCosts(
        _timed_to(n_max, tuple(s * scale for s in (0.050, 0.055, 0.0585, 0.063, 0.0665, 0.072, 0.078, 0.083, 0.089)))))
    sel = select(target, AUTO, use_cache=False)
    assert (sel.drafter is not None and sel.drafter.name == "suffix decoding") == per_round
    assert per_round or sel.spec == "none", sel.choice.reason


def test_nothing_faster_runs_target_only_and_says_why(target, monkeypatch):
    _inject(monkeypatch, {"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    sel = select(target, AUTO, use_cache=False)
    assert sel.drafter is None and sel.spec == "none" and sel.auto_gamma() is None
    assert "target-only" in sel.choice.reason and "1.05 target steps on this CPU" in sel.choice.reason


def test_a_tree_that_pays_is_chosen_and_run_as_a_tree(target, monkeypatch):
    _inject(monkeypatch, {"prompt-lookup": (0.001, 0.3)})
    monkeypatch.setattr(calibration, "with_tree", lambda target, drafter, ids, profile, verify: DrafterProfile(
        profile.name, profile.label, profile.c, profile.alpha, tree_accepted=tuple(min(0.25 * n, 2.0) for n in
                                                                                  range(1, 33)), tree_c=0.01))
    sel = select(target, "prompt-lookup", use_cache=False)
    assert sel.choice.tree and sel.drafter.budget == sel.choice.nodes and sel.drafter.name == "prompt lookup tree"
    live = sel.auto_gamma()  # a tree keeps its measured size and depth; live rounds move its prediction
    assert live.gamma() == sel.choice.gamma and live.nodes == sel.choice.nodes
    assert live.predicted == pytest.approx(sel.choice.predicted)
    chain = select(target, "prompt-lookup", use_cache=False, tree=False)
    assert not chain.choice.tree and chain.drafter.name == "prompt lookup"


def test_a_hand_picked_draft_is_kept_even_when_slow(target, monkeypatch):
    _inject(monkeypatch, {"self": (1.05, 0.98)})
    sel = select(target, "self", use_cache=False)
    assert sel.spec == "self" and sel.drafter is not None
    assert sel.choice.predicted < 1.0 and "1.05 target steps" in sel.choice.reason


def test_the_profile_key_follows_machine_weights_device_dtype_and_kernels_on_offer(target, monkeypatch):
    from app.machine import profile as machine_profile
    from app.machine import threads, torch_path

    cpu = torch.device("cpu")
    key = machine_profile.profile_key(target.model, cpu, None)
    assert target.profile.key == key and machine_profile.profile_key(target.model, cpu, None) == key
    assert machine_profile.profile_key(target.model, cpu, torch.float32) != key
    monkeypatch.setattr(cost_cache, "machine_id", lambda: "another machine")
    assert machine_profile.profile_key(target.model, cpu, None) != key
    monkeypatch.undo()
    offered = torch_path.candidates(None)  # a new kernel path on offer (the native C model, later): timed again
    monkeypatch.setattr(torch_path, "candidates", lambda dtype, native=False: [*offered, torch_path.LinearPath("float16")])
    assert machine_profile.profile_key(target.model, cpu, None) != key
    monkeypatch.undo()
    from app import native

    torch_only = machine_profile.profile_key(target.model, cpu, None, "torch")
    forced = machine_profile.profile_key(target.model, cpu, None, "native")
    assert len({key, forced}) == 2  # a forced native choice was never timed: auto does not reuse it
    if native.active_build() is not None:  # auto offers native beside torch's paths; a rebuilt kernel is timed anew
        assert torch_only != key
        monkeypatch.setattr(native, "build_id", lambda: "AVX-512 VNNI 0123456789abcdef")
        assert machine_profile.profile_key(target.model, cpu, None) != key
        monkeypatch.undo()
    # A pinned count is part of the key. CI may pin through OMP_NUM_THREADS, so compare unpinned with pinned.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_pinned", None)
    monkeypatch.setattr(threads, "DEFAULT", 2)  # a one-core worker (xdist) would count as pinned already
    unpinned = machine_profile.profile_key(target.model, cpu, None)
    monkeypatch.setattr(threads, "_pinned", 1)
    assert machine_profile.profile_key(target.model, cpu, None) != unpinned
    monkeypatch.undo()
    original = cost_cache.model_fingerprint(target.model)
    weight = target.model.get_input_embeddings().weight
    try:
        weight.data[0, 0] += 1.0  # other weights: another pair
        assert cost_cache.model_fingerprint(target.model) != original
        assert machine_profile.profile_key(target.model, cpu, None) != key
    finally:
        weight.data[0, 0] -= 1.0


def test_another_drafter_is_timed_alone_and_a_longer_pass_times_the_step_again(target, monkeypatch):
    """Drafter costs are kept per drafter in the one profile: a new candidate times only itself; a γ
    needing a longer verify pass than was timed times the step again, and so every drafter with it."""
    probed, verified = [], []
    _inject(monkeypatch, {"self": (0.5, 0.5), "prompt-lookup": (0.001, 0.6)})
    monkeypatch.setattr(calibration, "measure_verify", lambda model, ids, n_max, **k: verified.append(n_max) or VerifyCosts(
        tuple(0.05 + 0.005 * n for n in range(n_max))))
    monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: probed.append(
        spec) or DrafterProfile(spec, spec, 0.5, 0.5))
    calibrate(target, ["prompt-lookup"])
    cal, _ = calibrate(target, ["self", "prompt-lookup"])
    assert probed == ["prompt-lookup", "self"] and len(verified) == 1 and not cal.cached
    assert [p.name for p in cal.profiles] == ["self", "prompt-lookup"]
    assert calibrate(target, ["self", "prompt-lookup"])[0].cached
    calibrate(target, ["prompt-lookup"], gamma_max=40)  # 41 tokens: past the 33 timed
    assert len(verified) == 2 and probed[-1] == "prompt-lookup"


def test_a_damaged_cache_file_means_measuring_again(target, monkeypatch):
    cost_cache.cache_file().write_text("{not json")
    _inject(monkeypatch, {"prompt-lookup": (0.001, 0.6)})
    cal, built = calibrate(target, ["prompt-lookup"])
    assert not cal.cached and "prompt-lookup" in built
    data = json.loads(cost_cache.cache_file().read_text())
    assert len(data["entries"]) == 1
    cal2, built2 = calibrate(target, ["prompt-lookup"])
    assert cal2.cached and not built2 and cal2.profiles == cal.profiles


def test_verify_costs_are_measured_per_token_count(target):
    ids = target.encode_chat([{"role": "user", "content": "hello there"}])
    v = calibration.measure_verify(target.model, ids, 5, reps=1)
    assert len(v.seconds) == 5 and all(s > 0 for s in v.seconds) and v.head >= 0
    assert v.v(1) == 1.0


def test_auto_times_a_trained_draft_and_takes_alpha_from_its_report(target, tmp_path, monkeypatch):
    """A trained draft made for the target is a candidate; its α per position comes from its report."""
    from app.drafting.trained_drafts import save_trained_draft
    from app.engine.feature_format import FeatureDraftConfig, fingerprint
    from app.engine.feature_net import FeatureDraftModel

    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))  # the user's drafts folder
    draft = FeatureDraftModel(FeatureDraftConfig.for_target(target.model, n_layers=1, vocab_k=24))
    draft.vocab_ids.copy_(torch.arange(24))
    path = tmp_path / "data" / "drafts" / "tiny"
    save_trained_draft(path, draft, name="tiny draft", target_name=target.name,
                       extra={"fingerprint": fingerprint(target.model)})
    (path / "report.json").write_text(json.dumps({
        "summary": {"alpha_greedy": 0.5, "alpha_sampled": 0.4, "c": 0.05},
        "evaluation": {"by_temperature": {"greedy": {"per_position_acceptance": [0.6, 0.5, 0.4, None]}}},
    }))
    assert candidate_specs(target) == [str(path), "self", "prompt-lookup"]  # trained drafts first, as before
    cal, built = calibrate(target, [str(path)], use_cache=False)
    (profile,) = cal.profiles
    assert profile.label == "tiny draft" and profile.alpha == 0.5 and profile.per_position == (0.6, 0.5, 0.4)
    assert profile.c > 0 and "trained feature draft" in built[str(path)].name
    # Asked for as "trained" (the CLI's --draft trained), the same draft is timed with the same report.
    cal, _ = calibrate(target, ["trained"], use_cache=False)
    (by_name,) = cal.profiles
    assert by_name.name == "trained" and by_name.alpha == 0.5 and by_name.per_position == (0.6, 0.5, 0.4)


@pytest.mark.parametrize("kernels, first_load", [("auto", "native"), ("torch", "stored")])
def test_a_gguf_and_its_converted_copy_share_the_timings(tiny_gguf, kernels, first_load):
    """The first run times the drafters on the GGUF it just read (straight onto the native kernel, or
    dequantised for torch); the second launch loads what the first kept and must find those timings (the key
    once held the file's path and quantisation: timed twice)."""
    first = load_model(str(tiny_gguf), device="cpu", kernels=kernels)
    second = load_model(str(tiny_gguf), device="cpu", kernels=kernels)
    assert (first.extra["converted_cache"], second.extra["converted_cache"]) == (first_load, "hit")
    assert first.profile.key == second.profile.key


def test_tree_mass_per_budget_is_the_sum_of_path_masses():
    """p(path to v) multiplies p along the path; the budget-n tree is the first n nodes (ranked order)."""
    from app.drafting.tree_probe import accepted_by_budget, path_mass
    from app.engine import RoundEvent

    base = dict(round=1, gamma=3, drafted=1, accepted=1, emitted=2, bonus=False, overlap=(0.9,), draft_time=0.0,
                verify_time=0.0)
    tree = RoundEvent(**base, tree_tokens=(4, 5, 6), tree_parents=(-1, -1, 0), tree_p=(0.6, 0.3, 0.5))
    chain = RoundEvent(**base)
    assert path_mass(tree) == pytest.approx([0.6, 0.3, 0.3])
    assert accepted_by_budget([tree, chain], 4) == pytest.approx((0.6, 0.9, 1.2, 1.2))
    assert accepted_by_budget([chain], 4) == ()


def _inject_profiles(monkeypatch, profiles: dict[str, DrafterProfile]):
    _inject(monkeypatch, {})
    monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: profiles[spec])


def test_lookup_else_a_paying_draft_is_chosen_with_its_controller(target, monkeypatch):
    """Lookup matching in 40% of rounds, a draft that pays alone: lookup where it pays, else the draft."""
    from app.engine.lookup_else import LookupElseDrafter
    from app.engine.policy import LookupElseGamma

    self_draft = DrafterProfile("self", "bf16 self-draft", 0.1, 0.6)
    _inject_profiles(monkeypatch, {"self": self_draft,
                                   "prompt-lookup": DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.8,
                                                                   coverage=0.4)})
    sel = select(target, AUTO, use_cache=False)
    assert isinstance(sel.drafter, LookupElseDrafter) and sel.spec == "self"
    assert sel.drafter.name.startswith("prompt lookup, else ") and sel.drafter.draft_gamma == sel.choice.gamma
    assert sel.choice.reason.startswith("prompt lookup, else bf16 self-draft, γ ")
    assert sel.choice.options[0].label == "prompt lookup, else bf16 self-draft"
    assert sel.choice.predicted > max(o.predicted for o in sel.choice.options[1:])
    assert isinstance(sel.auto_gamma(), LookupElseGamma)
    # Lookup that almost never matches right: still offered, predicted as the draft alone (the live α decides).
    _inject_profiles(monkeypatch, {"self": self_draft,
                                   "prompt-lookup": DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.02)})
    sel = select(target, AUTO, use_cache=False)
    alone = next(o for o in sel.choice.options[1:] if o.name == "self")
    assert isinstance(sel.drafter, LookupElseDrafter) and sel.choice.predicted == pytest.approx(alone.predicted)
    # Chosen by hand, the draft runs as asked.
    assert not isinstance(select(target, "self", use_cache=False).drafter, LookupElseDrafter)


def test_lookup_else_beside_lookup_per_round_needs_only_to_be_faster(target, monkeypatch):
    """A draft barely faster than target-only (under MARGIN alone): beside lookup per round, which never
    runs slower than target-only, the lookup-else form is taken since it is predicted faster still."""
    from app.engine.lookup_else import LookupElseDrafter

    _inject_profiles(monkeypatch, {"self": DrafterProfile("self", "bf16 self-draft", 0.05, 0.17),
                                   "prompt-lookup": DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.2,
                                                                   coverage=0.2)})
    sel = select(target, AUTO, use_cache=False)
    alone = {o.name: o.predicted for o in sel.choice.options[1:]}
    assert 1.0 < alone["self"] < 1.03 and alone["prompt-lookup"] < 1.03
    assert isinstance(sel.drafter, LookupElseDrafter) and sel.choice.predicted > 1.0


def test_a_candidate_that_cannot_be_built_is_left_out_and_not_tried_again(target, monkeypatch, tmp_path):
    _inject(monkeypatch, {"prompt-lookup": (0.001, 0.6)})
    missing = str(tmp_path / "no-such-draft")
    cal, _ = calibrate(target, [missing, "prompt-lookup"], skip_failures=True)
    assert [p.name for p in cal.profiles] == ["prompt-lookup"]
    monkeypatch.setattr(calibration, "make_drafter", lambda *a, **k: pytest.fail("tried again"))
    again, _ = calibrate(target, [missing, "prompt-lookup"], skip_failures=True)
    assert again.cached and again.profiles == cal.profiles


def test_a_rounds_own_work_and_the_per_round_match_are_timed_in_the_engines_rounds(target, monkeypatch):
    """timing.measure_rounds: what a round that verifies a proposal adds beyond its pass (VerifyCosts.round), and
    what the per-round lookup's matching costs a round, both read from the engine's own rounds. Planted: 20 ms
    more in each acceptance test of a proposal, and 10 ms in each match, must show in them; the calibration
    keeps both (the round's work in v(n) past one row) and reads them back from the profile."""
    import time

    from app.drafting import timing
    from app.engine import acceptance

    ids = target.encode_chat([{"role": "user", "content": "hello there"}])
    costs = calibration.measure_verify(target.model, ids, 5, reps=1)
    inner = calibration.per_round_lookup(target, costs, 0.5)
    plain_round, plain_match = timing.measure_rounds(target, ids, costs, inner)
    assert 0 <= plain_round < 0.1 and 0 < plain_match < 0.1  # a tiny model: far under a millisecond, when quiet
    real_accept, real_propose = acceptance._accept_greedy, type(inner).propose

    def slow_accept(p, q, x, *rest):
        if len(x):
            time.sleep(0.02)
        return real_accept(p, q, x, *rest)

    def slow_propose(self, ids_list, gamma):
        time.sleep(0.01)
        return real_propose(self, ids_list, gamma)

    monkeypatch.setattr(acceptance, "_accept_greedy", slow_accept)
    monkeypatch.setattr(type(inner), "propose", slow_propose)
    slow_round, slow_match = timing.measure_rounds(target, ids, costs, inner)
    assert slow_round >= 0.015 and slow_match >= 0.01
    monkeypatch.setattr(timing, "measure_rounds", lambda *a, **k: (0.004, 0.003))
    monkeypatch.setattr(calibration, "measure_rounds", timing.measure_rounds)
    cal, _ = calibrate(target, ["prompt-lookup"], remeasure=True)
    assert cal.verify.round == 0.004 and cal.match == 0.003
    assert cal.verify.v(2) == pytest.approx((cal.verify.seconds[1] + 0.004) / cal.verify.step)
    again, _ = calibrate(target, ["prompt-lookup"])
    assert again.cached and again.verify.round == 0.004 and again.match == 0.003
