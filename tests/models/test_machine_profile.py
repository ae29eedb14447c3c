"""The machine profile: a timing taken on a busy machine is measured again at the next quiet load, and live
rounds that disagree with the profile by more than 30% over a few dozen rounds have it measured again.
Tiny models, real timings; only the machine's load readings are planted (machine_load.use_reader)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from machine_readings import busy, quiet

from app.drafting.auto import AUTO, select
from app.engine import DecodeParams, RoundEvent
from app.machine import cost_cache, threads
from app.machine import load as machine_load
from app.machine import profile as machine_profile
from app.machine.live_check import ROUNDS, LiveCheck, dispute
from app.machine.load import Load, Reading
from app.models import load_model


@pytest.fixture
def timed_threads(monkeypatch):
    """Thread counts 1 and 2 are timed at each load (nothing pinned); torch's count restored after."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_pinned", None)
    monkeypatch.setattr(threads, "DEFAULT", 2)
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _load(spec: str):
    target = load_model(spec, device="cpu")
    return target, select(target, AUTO)


def _entry(target) -> dict:
    return json.loads(cost_cache.cache_file().read_text())["entries"][target.profile.key]


def test_a_busy_timing_is_kept_at_busy_loads_and_measured_again_at_the_next_quiet_one(tiny_pair_dirs, timed_threads):
    spec = str(tiny_pair_dirs[0])
    with machine_load.use_reader(busy):
        target, sel = _load(spec)
        assert not target.threads.cached and not sel.calibration.cached
        entry = _entry(target)  # the load is recorded with each cached timing
        assert Load.from_json(entry["threads"]["load"]).busy and Load.from_json(entry["verify"]["load"]).busy
        assert all(Load.from_json(d["load"]).busy for d in entry["drafters"])
        again, sel = _load(spec)  # still busy: a new timing would be no better, so the cached one is used
        assert again.threads.cached and sel.calibration.cached
    target, sel = _load(spec)  # a quiet load measures every busy part again
    assert not target.threads.cached and not sel.calibration.cached
    assert not any(load.busy for _, load in target.profile.loads)
    assert not Load.from_json(_entry(target)["verify"]["load"]).busy
    target, sel = _load(spec)  # quiet timings are kept
    assert target.threads.cached and sel.calibration.cached


def test_a_quiet_timing_is_kept_at_a_busy_load(tiny_pair_dirs, timed_threads):
    spec = str(tiny_pair_dirs[0])
    _load(spec)
    with machine_load.use_reader(busy):
        target, sel = _load(spec)
    assert target.threads.cached and sel.calibration.cached


def _rounds(profile, ratio: float, n: int) -> list[RoundEvent]:
    """Rounds whose verify time is `ratio` times what the profile predicts: target-only steps, chains of 3."""
    check = LiveCheck(profile)
    out = []
    for i in range(1, n + 1):
        drafted = 3 * (i % 2)
        out.append(RoundEvent(round=i, gamma=3, drafted=drafted, accepted=0, emitted=1, bonus=False,
                              overlap=(0.5,) * drafted, draft_time=0.0,
                              verify_time=ratio * check.expected(drafted + 1)))
    return out


@pytest.mark.parametrize(("ratio", "reload"), [(1.5, True), (0.6, True), (1.5, False)])
def test_live_rounds_that_disagree_have_the_profile_measured_again(tiny_pair_dirs, ratio, reload):
    """Slower or faster by more than 30%: disputed; the next load measures again, and so does the next
    drafter choice of a target that stays loaded (a draft swap)."""
    target, sel = _load(str(tiny_pair_dirs[0]))
    check = LiveCheck(target.profile)
    rounds = _rounds(target.profile, ratio, ROUNDS)
    for r in rounds[:-1]:
        check.observe(r)
    assert check.disagreement is None  # fewer than a few dozen rounds decide nothing
    check.observe(rounds[-1])
    why = check.disagreement
    assert why is not None and why.ratio == pytest.approx(ratio) and why.rounds == ROUNDS
    dispute(target.profile, why)
    assert _entry(target)["disputed"] == why.text
    if reload:
        target, sel = _load(str(tiny_pair_dirs[0]))  # the next load measures again, on a quiet machine too
    else:
        sel = select(target, AUTO)
    assert not sel.calibration.cached and target.profile.disputed == ""
    assert _load(str(tiny_pair_dirs[0]))[1].calibration.cached


def test_live_rounds_within_30_percent_keep_the_profile(tiny_pair_dirs):
    target, _ = _load(str(tiny_pair_dirs[0]))
    check = LiveCheck(target.profile)
    for r in _rounds(target.profile, 1.25, 3 * ROUNDS):
        check.observe(r)
    assert check.disagreement is None
    assert _load(str(tiny_pair_dirs[0]))[1].calibration.cached


def test_real_rounds_against_a_planted_profile_dispute_it_through_the_chat_model(tiny_pair_dirs):
    """A profile that says steps take a tenth of what they take (timed on some far faster machine): real
    target-only rounds fed to the chat model dispute it, and the next load measures again."""
    from app.session.chat_model import ChatModel

    target, sel = _load(str(tiny_pair_dirs[0]))
    v = target.profile.verify
    planted = replace(v, costs=replace(
        v.costs, seconds=tuple(s / 10 for s in v.costs.seconds)), loop_step=v.loop_step / 10)
    machine_profile.write(replace(target.profile, verify=planted))
    target, sel = _load(str(tiny_pair_dirs[0]))
    assert sel.calibration.cached
    chat = ChatModel(str(tiny_pair_dirs[0]))
    chat.install(target, None, "none", sel)
    ids = target.encode_chat([{"role": "user", "content": "hello there"}])
    params = DecodeParams(temperature=0.0, max_new_tokens=ROUNDS + 2)
    for _event in chat.answer(params).events(ids):  # the answer's loop feeds every round to the check
        pass
    why = chat.check_machine()
    assert why is not None and why.ratio > 1.3
    assert chat.target.profile.disputed and chat.check_machine() is None  # one verdict per loaded profile
    assert not _load(str(tiny_pair_dirs[0]))[1].calibration.cached


def test_measure_again_retimes_a_fresh_quiet_profile_and_says_what_changed(tiny_pair_dirs, timed_threads):
    """The front end's one call (Models ▸ Measure this machine again): a pair load with remeasure=True."""
    from app.session.loading import LoadRequest, load_pair

    spec = str(tiny_pair_dirs[0])
    first, _ = _load(spec)
    request = LoadRequest(spec, AUTO, current=first, remeasure=True)
    result = load_pair(request, lambda _f: None, lambda _what, _p: None)
    assert result.target is not first and not result.target.threads.cached
    assert not result.selection.calibration.cached and result.changes
    assert any(line.startswith("target step:") for line in result.changes)


def test_the_busy_rule_reads_other_load_and_the_measuring_threads_share():
    def reading(loadavg, cpu, delay):
        return Reading(loadavg=loadavg, thread_cpu=cpu, process_cpu=cpu, run_delay=delay)

    cores = machine_load.between(reading(0, 0, 0), reading(0, 0, 0), 1.0).cores
    quiet_load = machine_load.between(reading(0.0, 0.0, 0.0), reading(1.0, 1.0, 0.0), 1.0)
    assert not quiet_load.busy and quiet_load.share == 1.0 and quiet_load.others == 0.0  # only this process
    crowded = machine_load.between(reading(0, 0, 0), reading(1.0 + cores * 0.6, 1.0, 0.0), 1.0)
    assert crowded.busy and crowded.others == pytest.approx(0.6)  # others hold 60% of the cores
    starved = machine_load.between(reading(0, 0, 0), reading(1.0, 0.6, 0.4), 1.0)
    assert starved.busy and starved.share == pytest.approx(0.6)  # waited 40% of the time for a core
    with machine_load.use_reader(busy):
        assert machine_load.spot().busy
    with machine_load.use_reader(quiet):
        assert not machine_load.spot().busy
    real = machine_load.read_machine()
    assert real.loadavg >= 0 and real.thread_cpu > 0


def test_a_busy_profile_gives_no_live_verdict(tiny_pair_dirs):
    """Timed busy, it is measured again at the next quiet load already; a dispute would only re-time it
    at every busy launch."""
    with machine_load.use_reader(busy):
        target, _ = _load(str(tiny_pair_dirs[0]))
    check = LiveCheck(target.profile)
    for r in _rounds(target.profile, 2.0, ROUNDS):
        check.observe(r)
    assert check.disagreement is None


def test_the_spot_reading_counts_what_other_work_takes_of_every_core(monkeypatch):
    """The spin is one thread and finds a core free while another program holds half the machine; a timing
    on every core would not. The machine's own counters say so, and the spot reading is busy. Without them
    (the planted twin: the spin's share alone) it read quiet and every launch timed again."""
    cores = machine_load.between(Reading(0, 0, 0), Reading(0, 0, 0), 1.0).cores
    seconds = machine_load.SPOT_SECONDS

    def readings(others_cores: float):
        marks = iter([Reading(0.1, 0.0, 0.0, 0.0, 100.0),
                      Reading(0.1, seconds, seconds, 0.0, 100.0 + seconds * (1 + others_cores))])
        return lambda: next(marks)

    with machine_load.use_reader(readings(cores * 0.5)):
        crowded = machine_load.spot()
    assert crowded.busy and crowded.share < machine_load.BUSY_SHARE
    with machine_load.use_reader(readings(0.0)):
        assert not machine_load.spot().busy
    assert machine_load.read_machine().machine_cpu is not None  # Linux: the counters are read
