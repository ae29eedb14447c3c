"""The catalog lists what can be loaded; compatible_drafts filters it by tokenizer, loading no weights."""

from permuted import permuted_tokenizer
from tiny_models import tiny_model

from app.drafting.catalog import compatible_drafts, list_catalog


def test_catalog_lists_every_source(fake_hub, tiny_gguf, tiny_pair_dirs, tmp_path):
    (tmp_path / "not-a-model").mkdir()
    entries = {e.spec: e for e in list_catalog(extra_dirs=[tiny_gguf.parent, tiny_pair_dirs[0].parent, tmp_path])}
    assert entries["default"].kind == "embedded" and entries["default"].size_bytes > 50_000_000
    assert entries["self"].kind == "drafter" and entries["prompt-lookup"].kind == "drafter"  # the registry's, listed
    assert entries["org/tiny"].kind == "hub" and entries["org/tiny"].size_bytes > 0
    assert entries[str(tiny_gguf)].kind == "gguf"
    assert entries[str(tiny_pair_dirs[1])].kind == "folder"
    assert str(tmp_path / "not-a-model") not in entries


def test_hub_entries_are_causal_lms_only(fake_hub, isolated_cache):
    encoder = isolated_cache / "models--org--encoder" / "snapshots" / ("f" * 40)
    encoder.mkdir(parents=True)
    (encoder / "config.json").write_text('{"model_type": "bert", "architectures": ["BertModel"]}')
    (isolated_cache / "models--org--encoder" / "refs").mkdir()
    (isolated_cache / "models--org--encoder" / "refs" / "main").write_text("f" * 40)
    specs = [e.spec for e in list_catalog()]
    assert "org/tiny" in specs and "org/encoder" not in specs


def test_compatible_drafts_filters_by_tokenizer(fake_hub, tiny_pair_dirs, tmp_path):
    other = tmp_path / "models" / "permuted"
    tiny_model().save_pretrained(other)
    permuted_tokenizer().save_pretrained(other)
    catalog = list_catalog(extra_dirs=[tiny_pair_dirs[0].parent, tmp_path / "models"])
    target = next(e for e in catalog if e.spec == str(tiny_pair_dirs[0]))
    drafts = {e.spec for e in compatible_drafts(target, catalog)}
    assert {"self", "prompt-lookup", str(tiny_pair_dirs[1]), "org/tiny"} <= drafts
    assert str(other) not in drafts and "default" not in drafts
