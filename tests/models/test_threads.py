"""CPU threads chosen by timing at load: candidates, pins, the cache. Timings are injected where the
choice is checked (no timing asserts); one test times a real step to see the choice is applied."""

from __future__ import annotations

import pytest
import torch
from tiny_models import tiny_model

from app.machine import threads


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty cost cache, torch's thread count restored after, nothing pinned, no OMP_NUM_THREADS."""
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_pinned", None)
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_candidates_double_up_to_the_default():
    assert threads.candidates(1) == [1]
    assert threads.candidates(2) == [1, 2]
    assert threads.candidates(6) == [1, 2, 4, 6]
    assert threads.candidates(8) == [1, 2, 4, 8]


def test_the_fastest_count_is_set_and_cached(fresh, monkeypatch):
    monkeypatch.setattr(threads, "DEFAULT", 4)
    monkeypatch.setattr(threads, "time_threads", lambda model, counts: {n: {1: 9.0, 2: 5.0, 4: 7.0}[n] for n in counts})
    model = tiny_model()
    choice = threads.choose_threads(model)
    assert choice.threads == 2 and torch.get_num_threads() == 2 and not choice.cached
    assert choice.reason.startswith("2 threads: fastest decode step here")
    monkeypatch.setattr(threads, "time_threads", lambda *a: pytest.fail("the profile's choice not used"))
    torch.set_num_threads(1)
    again = threads.choose_threads(model, known=choice)  # as the machine profile holds it
    assert again.cached and again.threads == 2 and torch.get_num_threads() == 2


def test_pinned_counts_are_kept_untimed(fresh, monkeypatch):
    monkeypatch.setattr(threads, "DEFAULT", 4)
    monkeypatch.setattr(threads, "time_threads", lambda *a: pytest.fail("a pinned count is not timed"))
    threads.pin(1)
    assert threads.choose_threads(tiny_model()).threads == 1 and torch.get_num_threads() == 1
    monkeypatch.setattr(threads, "_pinned", None)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert "pinned" in threads.choose_threads(tiny_model()).reason


def test_a_real_timing_picks_one_of_the_candidates(fresh, monkeypatch):
    monkeypatch.setattr(threads, "DEFAULT", 2)
    choice = threads.choose_threads(tiny_model())
    assert set(choice.timings) == {1, 2} and all(ms > 0 for ms in choice.timings.values())
    assert choice.threads == min(choice.timings, key=choice.timings.get) == torch.get_num_threads()
