"""Every source loads; every bad input raises its ModelError subclass with a message that says why."""

import json

import pytest
import torch

from app.engine.kv import backend_for
from app.errors import (
    CorruptModel,
    ModelNotFound,
    NotAModel,
    NotCached,
    OutOfMemory,
    PickleOnly,
    RemoteCodeRequired,
    UnsupportedArchitecture,
)
from app.models import load_model
from app.models import memory as memory_module


def test_folder_loads_with_tokenizer_and_progress(tiny_pair_dirs):
    stages = []
    m = load_model(str(tiny_pair_dirs[0]), device="cpu", progress=lambda p: stages.append(p))
    assert m.extra["source"] == "folder" and m.vocab_size == 34 and m.stop_token_ids == (1,)
    assert m.dtype == torch.float32
    assert stages[0].stage == "resolve" and stages[-1].stage == "done" and stages[-1].fraction == 1.0
    assert [p.fraction for p in stages] == sorted(p.fraction for p in stages)


@pytest.mark.parametrize("kernels, first_load", [("native", "native"), ("torch", "stored")])
def test_gguf_converts_once_then_loads_from_cache(tiny_gguf, kernels, first_load):
    """Read straight onto the native kernel (its records kept), or dequantised for torch (the converted folder
    kept): either way the second launch loads what the first kept, with the same tokenizer and logits."""
    first = load_model(str(tiny_gguf), device="cpu", kernels=kernels)
    second = load_model(str(tiny_gguf), device="cpu", kernels=kernels)
    assert (first.extra["converted_cache"], second.extra["converted_cache"]) == (first_load, "hit")
    assert first.tokenizer.get_vocab() == second.tokenizer.get_vocab()
    ids = torch.tensor([0, 3, 4, 5])
    logits = [backend_for(m.model).forward(backend_for(m.model).new_cache(), ids, keep=len(ids)) for m in (first, second)]
    assert torch.equal(*logits)


@pytest.mark.parametrize("kernels", ["native", "torch"])
def test_gguf_cache_can_be_bypassed(tiny_gguf, kernels):
    assert "converted_cache" not in load_model(str(tiny_gguf), device="cpu", use_cache=False, kernels=kernels).extra


def test_hub_id_loads_offline_from_the_cache(fake_hub):
    m = load_model(fake_hub, device="cpu")
    assert m.extra["source"] == "hub" and m.name == "org/tiny" and m.vocab_size == 34


def test_uncached_hub_id_offline_says_not_cached():
    with pytest.raises(NotCached, match="not in the local Hugging Face cache.*offline"):
        load_model("org/absent-model", device="cpu")


@pytest.mark.parametrize("spec", ["/no/such/dir", "./missing", "missing.gguf", "not a repo id!"])
def test_missing_paths(spec):
    with pytest.raises(ModelNotFound, match="no such file or directory"):
        load_model(spec, device="cpu")


def test_a_plain_file_is_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotAModel, match="not a .gguf model"):
        load_model(str(tmp_path / "notes.txt"), device="cpu")


def test_directory_without_config(tmp_path):
    with pytest.raises(NotAModel, match="no config.json"):
        load_model(str(tmp_path), device="cpu")


def test_config_without_weights(variant):
    with pytest.raises(NotAModel, match="no weights"):
        load_model(str(variant(drop=["*.safetensors"])), device="cpu")


def test_truncated_safetensors(variant):
    folder = variant()
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(CorruptModel, match="truncated"):
        load_model(str(folder), device="cpu")


def test_truncated_gguf(tiny_gguf, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf.read_bytes()[: tiny_gguf.stat().st_size - 4096])
    with pytest.raises(CorruptModel, match="truncated"):
        load_model(str(cut), device="cpu")


def test_garbage_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(CorruptModel, match="not a valid GGUF"):
        load_model(str(bad), device="cpu")


def test_unsupported_architecture(variant):
    with pytest.raises(UnsupportedArchitecture, match="model_type 'vit'"):
        load_model(str(variant({"model_type": "vit", "architectures": ["ViTModel"]})), device="cpu")


def test_remote_code_needs_opt_in(variant):
    folder = variant({"model_type": "tiny-custom", "auto_map": {"AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}})
    with pytest.raises(RemoteCodeRequired, match="--trust-remote-code"):
        load_model(str(folder), device="cpu")


def test_pickle_only_refused_unless_allowed(variant, tiny_pair_dirs):
    folder = variant(drop=["*.safetensors"])
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_pair_dirs[0])
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    with pytest.raises(PickleOnly, match="--allow-pickle"):
        load_model(str(folder), device="cpu")
    loaded = load_model(str(folder), device="cpu", allow_pickle=True)
    torch.testing.assert_close(loaded.model.lm_head.weight, model.lm_head.weight)


def test_too_large_for_free_memory_is_refused_before_loading(tiny_pair_dirs, monkeypatch):
    monkeypatch.setattr(memory_module, "free_bytes", lambda device: 1000)
    monkeypatch.setattr(memory_module.psutil, "virtual_memory", lambda: type("M", (), {"available": 1000})())
    with pytest.raises(OutOfMemory, match="needs about .* GiB but only 0.0 GiB is free on cpu"):
        load_model(str(tiny_pair_dirs[0]), device="cpu")


def test_out_of_memory_while_loading_is_caught_and_released(tiny_pair_dirs, monkeypatch):
    import transformers

    from app.models import loading

    released = []
    monkeypatch.setattr(loading.memory, "release", lambda: released.append(True))

    def explode(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", explode)
    with pytest.raises(OutOfMemory, match="ran out of memory while loading target"):
        load_model(str(tiny_pair_dirs[0]), device="cpu")
    assert released


def test_bad_device_is_a_clear_value_error(tiny_pair_dirs):
    with pytest.raises(ValueError, match="unknown device 'gpu7'"):
        load_model(str(tiny_pair_dirs[0]), device="gpu7")


def test_config_that_is_not_json(variant):
    folder = variant()
    (folder / "config.json").write_text("{ not json")
    with pytest.raises(CorruptModel, match="not valid JSON"):
        load_model(str(folder), device="cpu")


def test_hub_snapshot_is_validated_like_a_folder(fake_hub, isolated_cache):
    snapshot = next((isolated_cache / "models--org--tiny" / "snapshots").iterdir())
    config = json.loads((snapshot / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "x.Y"}
    config["model_type"] = "custom"
    (snapshot / "config.json").write_text(json.dumps(config))
    with pytest.raises(RemoteCodeRequired):
        load_model(fake_hub, device="cpu")
