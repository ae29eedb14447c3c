"""Stop sequences over streamed pieces: nothing of a stop sequence is ever released, text before it always is."""

from __future__ import annotations

import random

import pytest

from app.server.stops import StopText


def stream(stops: tuple[str, ...], pieces: list[str]) -> tuple[str, bool]:
    s = StopText(stops)
    out = "".join(s.push(p) for p in pieces)
    return out + s.flush(), s.matched


@pytest.mark.parametrize("seed", range(200))
def test_any_split_of_the_text_gives_the_text_cut_before_the_first_stop(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice("ab\n.") for _ in range(rng.randint(0, 30)))
    stops = tuple({"".join(rng.choice("ab\n.") for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))})
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 8))))
    pieces = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    first = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    assert stream(stops, pieces) == ((text[:first], True) if first >= 0 else (text, False))


def test_a_prefix_is_held_until_the_next_piece_decides():
    s = StopText(("END",))
    assert s.push("abE") == "ab"  # "E" may begin END
    assert s.push("N") == ""
    assert s.push("x") == "ENx"  # it did not
    assert s.push("yEND and more") == "y" and s.matched
    assert s.push("later") == "" and s.flush() == ""


def test_no_stops_release_everything_at_once():
    s = StopText(())
    assert [s.push(p) for p in ("a", "", "bc")] == ["a", "", "bc"] and s.flush() == ""
