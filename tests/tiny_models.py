"""Tiny random-weight models and a character tokenizer, small enough to enumerate distributions.

The draft is the target plus weight noise, so acceptance is neither 0 nor 1 and every token
status (accepted, corrected, bonus) shows up in short runs.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIALS = ["<s>", "</s>", "<unk>"]
CHARS = list(" abcdefghijklmnopqrstuvwxyz.,!?")
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['content'] }}</s>{% endfor %}{% if add_generation_prompt %}<s>{% endif %}"
)


def char_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {tok: i for i, tok in enumerate(SPECIALS + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="</s>"
    )
    fast.add_special_tokens({"additional_special_tokens": []})
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_model(vocab_size: int = 34, layers: int = 2, seed: int = 0, scale: float = 4.0,
               max_positions: int = 256) -> LlamaForCausalLM:
    """A Llama with hidden size 32; `scale` sharpens the random logits so answers are not uniform noise."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
        bos_token_id=0, eos_token_id=1, pad_token_id=1, tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
    return model


def noisy_copy(model: LlamaForCausalLM, noise: float, seed: int = 1) -> LlamaForCausalLM:
    """A draft that agrees with the target often but not always."""
    draft = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in draft.parameters():
            param.add_(torch.randn(param.shape, generator=gen) * noise * param.std().clamp_min(1e-3))
    return draft


def save_tiny_pair(root: Path, noise: float = 1.5) -> tuple[Path, Path]:
    """Write target and draft (with tokenizer) as save_pretrained folders: root/target, root/draft."""
    tokenizer = char_tokenizer()
    target = tiny_model()
    draft = noisy_copy(target, noise)
    paths = []
    for name, model in (("target", target), ("draft", draft)):
        path = Path(root) / name
        model.generation_config.eos_token_id = 1
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths.append(path)
    return paths[0], paths[1]
