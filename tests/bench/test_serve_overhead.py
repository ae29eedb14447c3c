"""The server-overhead measurement streams through a real `speclens serve` on loopback; no timing assertions."""

import pytest

from app.bench.prompts import load_suite
from app.engine import DecodeParams


@pytest.mark.timeout(120)
def test_served_and_generated_answers_have_the_same_tokens(tiny_pair, tiny_suite):
    from app.bench.serve_overhead import markdown_lines, measure_serve_overhead

    params = DecodeParams(gamma=3, temperature=1.0, max_new_tokens=12, seed=5)
    result = measure_serve_overhead(tiny_pair, load_suite(str(tiny_suite)), params, repeats=1)
    assert result["same_tokens"] and result["answers"] == 2  # a fixed seed: serving changes nothing but speed
    assert result["generate_tps"] > 0 and result["served_tps"] > 0
    assert result["overhead"] == pytest.approx(1 - result["served_tps"] / result["generate_tps"])
    assert result["first_token_s"] > 0 and result["first_round_s"] > 0
    text = "\n".join(markdown_lines(result))
    assert "## Local server overhead" in text and "same tokens: yes" in text
