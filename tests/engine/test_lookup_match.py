"""Prompt lookup's match, kept up to date as the context grows (drafters.NgramStarts), equals a scan of the
whole context for the latest earlier occurrence of its last n-gram (longest n first), on random contexts that
grow a token or a few at a time, and after the context is cut (as a rejected draft's rows are) or replaced.
Planted: kept starts that trust a context's length instead of its tokens must disagree with the scan."""

from __future__ import annotations

import random

from app.engine.drafters import NgramStarts, PromptLookupDrafter


def scanned(ids: list[int], gamma: int, max_ngram: int = 3, min_ngram: int = 1) -> tuple[int, list[int]]:
    for n in range(min(max_ngram, len(ids) - 1), min_ngram - 1, -1):
        tail = ids[-n:]
        for start in range(len(ids) - n - 1, -1, -1):
            if ids[start : start + n] == tail:
                return n, ids[start + n : start + n + gamma]
    return 0, []


def disagreements(drafter: PromptLookupDrafter, seed: int = 0) -> tuple[int, int, int]:
    """(rounds checked, rounds that matched, rounds whose match differs from the scan's)."""
    rng = random.Random(seed)
    checked = matched = wrong = 0
    for _ in range(40):
        vocab = rng.choice([3, 6, 20])
        ids = [rng.randrange(vocab) for _ in range(rng.randrange(1, 5))]
        for _ in range(60):
            gamma = rng.randrange(1, 9)
            got = drafter.match(ids, gamma)
            checked, matched, wrong = checked + 1, matched + bool(got[0]), wrong + (got != scanned(ids, gamma))
            if rng.random() < 0.05:
                ids = ids[: rng.randrange(1, len(ids) + 1)]  # cut back
            ids = ids + [rng.randrange(vocab) for _ in range(rng.randrange(1, 4))]
    return checked, matched, wrong


def test_the_kept_starts_find_what_a_scan_finds():
    checked, matched, wrong = disagreements(PromptLookupDrafter())
    assert checked == 2400 and 0 < matched < checked and wrong == 0


class _LengthOnly(NgramStarts):
    """Planted: a context is taken as the one indexed whenever it is no shorter."""

    def _update(self, ids_list: list[int]) -> None:
        if len(ids_list) < len(self.ids):
            self.ids, self.last, self.previous = [], {}, {}
        self.ids, tail = self.ids[:], ids_list[len(self.ids) :]
        known = len(self.ids)
        super()._update(self.ids + tail if known else ids_list)


def test_starts_kept_for_another_context_are_caught():
    drafter = PromptLookupDrafter()
    drafter.starts = _LengthOnly(drafter.starts.sizes)
    assert disagreements(drafter)[2] > 0
