"""The transformers cache backend (every model call and cache operation on a DynamicCache), `backend_for`,
and the same operations as plain functions of a model for callers outside the rounds.

`backend_for(model)` is the one way the engine reaches a model: the model's own backend when it brings
one (a `cache_backend` attribute: a factory called with no arguments, or the backend itself, for a
model that is not a transformers model and keeps its own KV cache), else `TransformersBackend`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from transformers import DynamicCache

from .protocols import CacheBackend
from .tree import additive

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its import is the model classes' (~2 s): only for annotations

# Attention kernels that take an arbitrary additive 4D mask as it is (flash-attention-2 and flex don't).
MASKED_ATTENTION = {"sdpa", "eager", "speclens_rows"}  # the last: app.machine.attention, each row in shapes of its own under the mask
# Configs whose causal-LM forward does more than `lm_head(hidden)` (soft-capping, scaling).
_HEAD_EXTRAS = ("final_logit_softcapping", "logit_scale", "logits_scaling")


def backend_for(model: Any) -> CacheBackend:
    """The cache backend of `model`: its own (`cache_backend`), else the transformers one."""
    own = getattr(model, "cache_backend", None)
    if own is not None:
        return own() if callable(own) else own
    return TransformersBackend(model)


def owns_backend(model: Any) -> bool:
    """Whether the model brings its own cache backend (a native model), i.e. is not a transformers model."""
    return getattr(model, "cache_backend", None) is not None


_CACHE_ARGUMENT: dict[type, str] = {}  # per model class: its signature is read once


def cache_argument(model_class: type) -> str:
    """`cache` where forward() takes it (transformers 5.24+; `past_key_values` is then deprecated, removed
    in 5.40), else `past_key_values` (5.23, remote-code and not yet renamed families). Passing the wrong
    name would land in **kwargs and be ignored silently, so the signature decides."""
    name = _CACHE_ARGUMENT.get(model_class)
    if name is None:
        forward = getattr(model_class, "forward")  # noqa: B009 (a class of any model)
        name = "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"
        _CACHE_ARGUMENT[model_class] = name
    return name


class TransformersBackend:
    """A transformers causal LM on a DynamicCache."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.model = model
        self.device = next(model.parameters()).device

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.model.config)

    def length(self, cache: DynamicCache) -> int:
        return cache.get_seq_length()

    @torch.inference_mode()
    def forward(self, cache: DynamicCache, ids: torch.Tensor, keep: int) -> torch.Tensor:
        model = self.model
        out = model(input_ids=ids.view(1, -1), use_cache=True, logits_to_keep=keep,
                    **{cache_argument(type(model)): cache})
        return out.logits[0]

    @torch.inference_mode()
    def trunk(self, cache: DynamicCache, ids: torch.Tensor) -> torch.Tensor:
        base = self.model.base_model
        out = base(input_ids=ids.view(1, -1), use_cache=True, **{cache_argument(type(base)): cache})
        return out.last_hidden_state[0]

    @torch.inference_mode()
    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.get_output_embeddings()(hidden)

    def rollback(self, cache: DynamicCache, length: int) -> None:
        rollback(cache, length)

    @torch.inference_mode()
    def tree_forward(self, cache: DynamicCache, ids: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                     keep: int | None) -> torch.Tensor:
        # Float, additive: eager attention adds the mask to the scores (tree.additive says why).
        mask = additive(visible, next(self.model.parameters()).dtype)  # [1, 1, n, held + n]
        body = self.model.base_model if keep is None else self.model
        kwargs = {} if keep is None else {"logits_to_keep": keep}
        out = body(input_ids=ids.view(1, -1), attention_mask=mask, position_ids=positions.view(1, -1), use_cache=True,
                   **{cache_argument(type(body)): cache}, **kwargs)
        return out.last_hidden_state[0] if keep is None else out.logits[0]

    @torch.inference_mode()
    def compact(self, cache: DynamicCache, past_len: int, path: Sequence[int]) -> None:
        k = len(path)
        if k and list(path) != list(range(k)):  # an accepted prefix already sits in its slots
            device = cache.layers[0].keys.device
            src = past_len + torch.as_tensor(list(path), dtype=torch.long, device=device)  # row i sat at past_len + i
            for layer in cache.layers:
                layer.keys[..., past_len : past_len + k, :] = layer.keys.index_select(-2, src)
                layer.values[..., past_len : past_len + k, :] = layer.values.index_select(-2, src)
        self.rollback(cache, past_len + k)

    def sync(self) -> None:
        sync(self.device)

    def context_limit(self) -> int | None:
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = getattr(self.model.config, name, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def splits_head(self) -> bool:
        model = self.model
        config = model.config.get_text_config()
        if any(getattr(config, name, None) not in (None, 1, 1.0) for name in _HEAD_EXTRAS):
            return False
        return model.get_output_embeddings() is not None and hasattr(model.base_model, "layers")

    def tree_support(self) -> str | None:
        config = self.model.config.get_text_config()
        implementation = getattr(config, "_attn_implementation", None) or "eager"
        if implementation not in MASKED_ATTENTION:
            return f"token trees need sdpa or eager attention, not {implementation}"
        if getattr(config, "use_sliding_window", False) or any(
            t != "full_attention" for t in (getattr(config, "layer_types", None) or ())
        ):
            return "token trees do not support sliding-window attention"
        return None


# --- the same, as functions of a model (timing, threads, probes, the distiller) ----------------------


def new_cache(model: Any) -> Any:
    return backend_for(model).new_cache()


def length(model: Any, cache: Any) -> int:
    """Positions the model's cache holds."""
    return backend_for(model).length(cache)


def forward(model: Any, cache: Any, ids: torch.Tensor, keep: int) -> torch.Tensor:
    """Feed ids [n] after what the cache holds; returns logits [keep, V_model] for the last keep positions."""
    return backend_for(model).forward(cache, ids, keep)


def trunk(model: Any, cache: Any, ids: torch.Tensor) -> torch.Tensor:
    """Feed ids [n] after what the cache holds through the decoder only: final-norm hidden states [n, H]."""
    return backend_for(model).trunk(cache, ids)


def head(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """hidden [..., H] -> logits [..., V_model]: the output rows applied to only the rows asked for."""
    return backend_for(model).head(hidden)


def rollback(cache: DynamicCache, length: int) -> None:
    """Keep the first `length` positions of a DynamicCache (or of a model's own cache, which brings its
    own `rollback`); entries past it (rejected drafts) are dropped."""
    own = getattr(cache, "rollback", None)
    if own is not None:
        own(length)
        return
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def context_limit(model: Any) -> int | None:
    """The longest sequence the model's position embeddings allow, when the config says."""
    return backend_for(model).context_limit()


def splits_head(model: Any) -> bool:
    """True when logits are exactly `output_embeddings(base_model(...).last_hidden_state)`, so the trunk
    and the head can run separately (the features a feature draft reads)."""
    return backend_for(model).splits_head()


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on a CPU, where every call has already run)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
