"""Tiny random-weight models of the architectures people draft with, saved as safetensors folders
with a locally built tokenizer declared as that family's tokenizer class (no network).

`python tests/tiny_families.py DIR` writes them for the frozen app's `selftest --models DIR`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import char_tokenizer  # noqa: E402

# model_type -> the tokenizer class its checkpoints declare
FAMILIES = {
    "llama": "LlamaTokenizer",
    "qwen2": "Qwen2Tokenizer",
    "qwen3": "Qwen2Tokenizer",
    "mistral": "LlamaTokenizer",
    "gemma": "GemmaTokenizer",
    "gemma2": "GemmaTokenizer",
    "gemma3_text": "GemmaTokenizer",
    "phi3": "LlamaTokenizer",
    "gpt2": "GPT2Tokenizer",
}
SIZES = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             head_dim=8, max_position_embeddings=256)
GPT2_SIZES = dict(n_embd=32, n_layer=2, n_head=4, n_positions=256)


def save_family(model_type: str, folder: Path, seed: int = 0) -> Path:
    tokenizer = char_tokenizer()
    ids = dict(vocab_size=len(tokenizer), bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config = AutoConfig.for_model(model_type, **ids, **(GPT2_SIZES if model_type == "gpt2" else SIZES))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.generation_config.eos_token_id = 1
    model.save_pretrained(folder)  # safetensors
    tokenizer.save_pretrained(folder)
    settings = folder / "tokenizer_config.json"
    data = json.loads(settings.read_text())
    data["tokenizer_class"] = FAMILIES[model_type]  # loaded through that family's tokenizer module
    settings.write_text(json.dumps(data))
    return folder


def save_families(root: Path) -> dict[str, Path]:
    return {name: save_family(name, Path(root) / name) for name in FAMILIES}


if __name__ == "__main__":
    for name, path in save_families(Path(sys.argv[1])).items():
        print(name, path)
