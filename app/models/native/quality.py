"""How close the native path is to the model as transformers loads it (float32: for a GGUF, the file's
own weights dequantised, so only the native activation rounding differs), measured at load.

Two figures, as issue targets state them: greedy continuations' token agreement on held-out chat
prompts (the native greedy tokens against float32's argmax, teacher-forced on the same tokens), and the
perplexity ratio on held-out text. The native path is kept where agreement >= 99% and ppl within 1%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...paths import resource_path

PROMPTS = 6  # held-out chat prompts
NEW_TOKENS = 32  # greedy tokens each
TEXT_TOKENS = 384  # held-out text for the perplexity
MIN_AGREEMENT, MAX_PPL_RATIO = 0.99, 1.01


@dataclass(frozen=True)
class Quality:
    agreement: float  # share of greedy tokens float32 would also pick
    ppl_ratio: float  # native perplexity / float32 perplexity on held-out text
    tokens: int

    @property
    def passes(self) -> bool:
        return self.agreement >= MIN_AGREEMENT and self.ppl_ratio <= MAX_PPL_RATIO

    def describe(self) -> str:
        return f"{100 * self.agreement:.1f}% greedy agreement, ppl x{self.ppl_ratio:.3f} against fp32 ({self.tokens} tokens)"


def _prompts() -> list[str]:
    text = resource_path("distill", "heldout_prompts.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


@torch.inference_mode()
def measure(backend, model, tokenizer) -> Quality:
    """backend: the native model's (native.model.NativeCausalLM.cache_backend); model: transformers' float32
    model it was made from, the reference."""
    prompts = _prompts()
    agree = total = 0
    for prompt in prompts[:PROMPTS]:
        if getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                return_dict=True, return_tensors="pt")["input_ids"][0]
        else:
            ids = tokenizer(prompt, return_tensors="pt")["input_ids"][0]
        cache = backend.new_cache()
        logits = backend.forward(cache, ids, keep=1)
        out = []
        for _ in range(NEW_TOKENS):
            token = int(logits[-1].argmax())
            out.append(token)
            logits = backend.forward(cache, torch.tensor([token]), keep=1)
        seq = torch.cat([ids, torch.tensor(out)]).view(1, -1)
        ref = model(input_ids=seq).logits[0, len(ids) - 1 : -1].argmax(-1)  # float32's choice at each new token
        agree += int((ref == torch.tensor(out)).sum())
        total += len(out)
    limit = backend.context_limit() or TEXT_TOKENS  # a model with a shorter context is measured on what it holds
    text = tokenizer("\n".join(prompts[PROMPTS:]), return_tensors="pt")["input_ids"][0][: min(TEXT_TOKENS, limit)]
    native = backend.forward(backend.new_cache(), text, keep=len(text))
    ref = model(input_ids=text.view(1, -1)).logits[0]
    nll = [F.cross_entropy(x[:-1].float(), text[1:]).item() for x in (native, ref)]
    return Quality(agree / max(total, 1), math.exp(nll[0] - nll[1]), total + len(text))
