"""A model listed in the catalog, then removed or changed before (or while) it is loaded: a clear
ModelError naming it, never a traceback from deep inside transformers."""

from __future__ import annotations

import json

import pytest
import transformers

from app.drafting.catalog import list_catalog
from app.errors import CorruptModel, ModelError, ModelNotFound, NotAModel
from app.models import load_model


def listed(folder):
    (entry,) = [e for e in list_catalog(extra_dirs=[folder.parent]) if e.path == str(folder)]
    return entry.spec


def test_a_folder_removed_after_listing(variant):
    import shutil

    folder = variant()
    spec = listed(folder)
    shutil.rmtree(folder)
    with pytest.raises(ModelNotFound, match="no such file or directory"):
        load_model(spec, device="cpu")


def test_weights_removed_after_listing(variant):
    folder = variant()
    spec = listed(folder)
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    with pytest.raises(NotAModel, match="no weights"):
        load_model(spec, device="cpu")


def test_weights_truncated_after_listing(variant):
    folder = variant()
    spec = listed(folder)
    (weights,) = folder.glob("*.safetensors")
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(CorruptModel, match="truncated"):
        load_model(spec, device="cpu")


def test_config_replaced_by_another_architecture_after_listing(variant):
    folder = variant()
    spec = listed(folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_size=64, intermediate_size=128)  # no longer matches the weights
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError) as info:
        load_model(spec, device="cpu")
    assert folder.name in str(info.value) and "\n" not in str(info.value)


def test_weights_removed_while_loading(variant, monkeypatch):
    """Between the pre-flight (headers read) and transformers opening the file."""
    folder = variant()
    real = transformers.AutoModelForCausalLM.from_pretrained

    def vanish_then_load(path, **kwargs):
        for weights in folder.glob("*.safetensors"):
            weights.unlink()
        return real(path, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", vanish_then_load)
    with pytest.raises(ModelError, match=f"could not load {folder.name}"):
        load_model(listed(folder), device="cpu")
