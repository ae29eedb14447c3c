"""Model calls against a KV cache (whole, trunk only or head only), rolling the cache back, and the device sync."""

from __future__ import annotations

import functools
import inspect

import torch
from transformers import DynamicCache, PreTrainedModel


def new_cache(model: PreTrainedModel) -> DynamicCache:
    return DynamicCache(config=model.config)


@torch.inference_mode()
def forward(model: PreTrainedModel, cache: DynamicCache, ids: torch.Tensor, keep: int) -> torch.Tensor:
    """Feed ids [n] after what the cache holds; returns logits [keep, V_model] for the last keep positions."""
    kwargs = {cache_argument(type(model)): cache}
    out = model(input_ids=ids.view(1, -1), use_cache=True, logits_to_keep=keep, **kwargs)
    return out.logits[0]


@functools.cache
def cache_argument(model_class: type) -> str:
    """`cache` where forward() takes it (transformers 5.24+; `past_key_values` is then deprecated, removed
    in 5.40), else `past_key_values` (5.23, remote-code and not yet renamed families). Passing the wrong
    name would land in **kwargs and be ignored silently, so the signature decides."""
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def rollback(cache: DynamicCache, length: int) -> None:
    """Keep the first `length` positions; entries past it (rejected drafts) are dropped."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def context_limit(model: PreTrainedModel) -> int | None:
    """The longest sequence the model's position embeddings allow, when the config says."""
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(model.config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


# Configs whose causal-LM forward does more than `lm_head(hidden)` (soft-capping, scaling).
_HEAD_EXTRAS = ("final_logit_softcapping", "logit_scale", "logits_scaling")


def splits_head(model: PreTrainedModel) -> bool:
    """True when logits are exactly `output_embeddings(base_model(...).last_hidden_state)`, so the trunk
    and the head can run separately (the features a feature draft reads)."""
    config = model.config.get_text_config()
    if any(getattr(config, name, None) not in (None, 1, 1.0) for name in _HEAD_EXTRAS):
        return False
    return model.get_output_embeddings() is not None and hasattr(model.base_model, "layers")


@torch.inference_mode()
def trunk(model: PreTrainedModel, cache: DynamicCache, ids: torch.Tensor) -> torch.Tensor:
    """Feed ids [n] after what the cache holds through the decoder only: final-norm hidden states [n, H]."""
    base = model.base_model
    out = base(input_ids=ids.view(1, -1), use_cache=True, **{cache_argument(type(base)): cache})
    return out.last_hidden_state[0]


@torch.inference_mode()
def head(model: PreTrainedModel, hidden: torch.Tensor) -> torch.Tensor:
    """hidden [..., H] -> logits [..., V_model]: the output rows applied to only the rows asked for."""
    return model.get_output_embeddings()(hidden)


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on a CPU, where every call has already run)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
