"""The malformed-input campaign (tests/models/malformed.py): every bad model file, config and cache gets its
clear one-line message or is made again, all in this one process, which then still answers; a cache made
again answers exactly as the untouched file does. docs/malformed-inputs.md lists every case."""

from __future__ import annotations

import malformed
import pytest

from app.native import active_build

pytestmark = [pytest.mark.skipif(active_build() is None, reason="the cases run the native kernel"),
              pytest.mark.xdist_group("malformed")]


@pytest.fixture(scope="module")
def untouched(tmp_path_factory) -> str:
    """The tiny GGUF's greedy answer, loaded natively from a cache of its own."""
    case = malformed.Case("cache", "untouched", lambda f: malformed._cached(f, lambda cache: None),
                          malformed.NATIVE, "")
    return malformed.attempt(case, tmp_path_factory.mktemp("untouched")).answer


@pytest.mark.parametrize("case", malformed.CASES, ids=[f"{c.group}: {c.name}" for c in malformed.CASES])
def test_a_bad_input_gets_a_clear_message(case, tmp_path, untouched):
    seen = malformed.attempt(case, tmp_path)
    assert seen.outcome == case.outcome, seen
    assert case.says in seen.message, seen.message
    assert "\n" not in seen.message and "Traceback" not in seen.message and "above report" not in seen.message
    if case.outcome != malformed.REFUSED:
        assert seen.answer  # it answered
    if case.group == "cache":
        assert seen.answer == untouched  # made again from the file: the file's own model, not the edited one


def test_the_docs_table_lists_every_case():
    table = (malformed.HERE.parents[1] / "docs" / "malformed-inputs.md").read_text(encoding="utf-8")
    for case in malformed.CASES:
        assert f"| {case.group}: {case.name} |" in table, case.name
