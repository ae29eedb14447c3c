"""`speclens bench --trees` on the tiny pair: tree and chain rows with their round statistics. No timing asserts."""

import json

import pytest

from app.bench.trees import HF_NOTE
from app.cli import main


@pytest.mark.parametrize("engine", [[], ["--static"]], ids=["dynamic", "static"])
def test_trees_rows_compare_chain_and_tree(tiny_pair_dirs, tiny_suite, tmp_path, capsys, engine, monkeypatch):
    from app.bench import trees
    from app.drafting.drafts import template_tokens

    target, _ = tiny_pair_dirs
    out = tmp_path / "trees.json"
    built = {}
    build_rows = trees.build_rows

    def spy(target, trained, lookup, cal, args):
        built.update(target=target, lookup=lookup)
        return build_rows(target, trained, lookup, cal, args)

    monkeypatch.setattr(trees, "build_rows", spy)
    assert main(["bench", "--trees", "--target", str(target), "--prompts", str(tiny_suite), "--max-new-tokens", "12",
                 "--repeats", "1", "--temperature", "0", "--tree-nodes", "6", "--threads", "1",
                 "--out", str(out), *engine]) == 0
    result = json.loads(out.read_text())
    # prompt lookup as timed and as every front end runs it (the registry's): never the template's tokens
    assert built["lookup"].never and built["lookup"].never == template_tokens(built["target"])
    rows = {r["name"]: r for r in result["settings"][0]["rows"]}
    assert list(rows)[0] == "SpecLens target-only"
    chain = next(r for name, r in rows.items() if "chain" in name)
    tree = next(r for name, r in rows.items() if "tree of 6 nodes" in name)
    assert all(r["same_as_target_only"] for r in rows.values())  # greedy: every row gives target-only's tokens
    assert 1 <= tree["tokens_per_round"] <= 7 and 1 < tree["verified_per_round"] <= 7
    assert chain["verified_per_round"] <= chain["gamma"] + 1 and tree["verify_steps"] > 0
    assert result["meta"]["engine"] == ("static" if engine else "dynamic")
    assert result["note"] == HF_NOTE and HF_NOTE in out.with_suffix(".md").read_text()
