"""GGUFs read straight onto the native path (native/direct.py, gguf_model.py): Llama with a Q4_K_M-like mix
(q/k Q4_K, v and down Q6_K: q/k/v side by side in their own types), Qwen2 in Q5_K, Qwen3 (q/k norms, attention
wider than the hidden size) in Q6_K. Each against transformers' own float32 model of the same file, greedy
speculation equal to target-only, the load's label naming the file's block types, and a later launch light."""

from __future__ import annotations

import json

import pytest
import torch
from kquant_gguf import write_kquant_gguf

from app.engine import DecodeParams, PromptLookupDrafter, generate
from app.native import active_build

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")

FILES = {
    "llama Q4_K_M mix": dict(types={"default": "Q4_K", "attn_v": "Q6_K", "ffn_down": "Q6_K"}, arch="llama"),
    "qwen2 Q5_K": dict(types="Q5_K", arch="qwen2"),
    "qwen3 Q6_K": dict(types="Q6_K", arch="qwen3", head_dim=128),
}


@pytest.fixture(params=list(FILES))
def gguf(request, tmp_path_factory):
    return write_kquant_gguf(tmp_path_factory.mktemp("k") / "model.gguf", **FILES[request.param])


def test_a_direct_model_follows_transformers_float32(gguf):
    from transformers import AutoModelForCausalLM

    from app.native import direct
    from app.native.build import assemble
    from app.native.gguf.model import parts_of

    index, config = direct.read(gguf)
    from app.native.backend import NativeBackend

    native = NativeBackend(assemble(config, parts_of(index, config)))
    reference = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32).eval()
    ids = torch.randint(0, 34, (12,), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        want = reference(ids.view(1, -1)).logits[0]
    got = native.forward(native.new_cache(), ids, keep=len(ids))
    assert (got - want).abs().max() < 1e-3 * want.abs().max()


def test_loading_names_the_files_types_and_speculation_equals_target_only(gguf, monkeypatch, tmp_path):
    from app.models import load_model

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    first = load_model(str(gguf), device="cpu")
    kinds = {"llama": "Q4_K + Q6_K", "qwen2": "Q5_K", "qwen3": "Q6_K"}[first.model.config.model_type]
    assert first.kernels.startswith(f"{kinds} · native"), first.kernels
    assert first.extra.get("light") is None and "own blocks" in first.profile.kernels.reason
    later = load_model(str(gguf), device="cpu")
    assert later.extra["light"] and later.kernels == first.kernels
    ids = first.encode_chat([{"role": "user", "content": "abcabc abcabc"}])
    params = DecodeParams(gamma=3, temperature=0, max_new_tokens=24, seed=0)
    expected = generate(first.model, ids, None, params, vocab_size=first.vocab_size).token_ids
    assert generate(later.model, ids, PromptLookupDrafter(), params, vocab_size=later.vocab_size).token_ids == expected


def test_speclens_generate_reports_the_native_kernels(tmp_path, monkeypatch, capsys):
    from app.cli import main

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    gguf = write_kquant_gguf(tmp_path / "mix.gguf", {"default": "Q4_K", "attn_v": "Q6_K"}, arch="llama")
    code = main(["generate", "--prompt", "abc", "--max-new-tokens", "4", "--target", str(gguf), "--draft", "none",
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads(out[out.index("{") :])
    assert report["target"]["kernels"].startswith("Q4_K + Q6_K · native"), report["target"]
