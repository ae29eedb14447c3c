"""Static KV caches and fixed-shape model steps, the gpt-fast way, over transformers models.

Each model gets one preallocated cache [1, kv_heads, capacity, head_dim] per layer. A call writes its
tokens' keys and values at the positions it is given and attends to the whole buffer through a mask
that hides every slot after the query's own position. So rolling back is only moving a host-side
length: stale slots (rejected drafts, padding) are never read before a real token overwrites them.
Shapes stay fixed (1-token draft steps, verify padded to PADDED_SIZES), which is what lets
`torch.compile(mode="reduce-overhead")` capture the steps as CUDA graphs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from transformers.cache_utils import Cache, StaticLayer

from .kv import cache_argument, owns_backend, sync

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Verify feeds gamma + 1 tokens padded up to the next of these (GAMMA_LIMIT = 16 needs 17 -> 32), a
# token tree its root and nodes (policy.cost.TREE_NODES_MAX = 32 needs 33 -> 64); each size is one compiled
# graph, so the set is small.
PADDED_SIZES = (1, 2, 4, 8, 16, 32, 64)
PAD_SLACK = PADDED_SIZES[-1]  # padding writes past the real tokens: the buffers are this much longer
MIN_CAPACITY = 1024  # buffers grow in powers of two from here, so typical chats reuse one compiled graph
SUPPORTED_TYPES = {"llama", "qwen2", "qwen3", "mistral"}  # lm_head(hidden) logits, full attention, RoPE
SUPPORTED_ROPE = {"default", "linear", "llama3"}  # position-independent scaling: padding cannot shift it


def verify_size(n: int) -> int:
    """The padded length for n real tokens."""
    return next(s for s in PADDED_SIZES if s >= n)


def static_support(model: PreTrainedModel) -> str | None:
    """None when the static path can run this model, else a one-line reason."""
    if owns_backend(model):  # the native C model: a pass is already one call
        return ("static caches and compiled steps run transformers models; this target runs on the native kernel, "
                "already one call a pass (load it with --kernels torch to compile)")
    config = model.config
    if config.model_type not in SUPPORTED_TYPES:
        return f"the static cache supports {', '.join(sorted(SUPPORTED_TYPES))} models, not {config.model_type}"
    if getattr(config, "use_sliding_window", False) or any(
        t != "full_attention" for t in (getattr(config, "layer_types", None) or ())
    ):
        return "the static cache does not support sliding-window attention"
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else "default"
    if rope_type not in SUPPORTED_ROPE:
        return f"the static cache does not support {rope_type} RoPE scaling"
    if getattr(config, "logit_scale", None) or getattr(config, "final_logit_softcapping", None):
        return "the static cache needs plain lm_head logits"
    return None


def compile_support(model: PreTrainedModel) -> str | None:
    """None when torch.compile can build this model's static steps, else a one-line reason (checked before
    any compiling starts, so a refusal never comes as a compiler traceback minutes in).

    A oneDNN-packed linear (the bf16 CPU path) holds its weight as an opaque MKLDNN tensor beside the
    module's parameters; inductor lowers mkldnn's packed linear only when that weight is a frozen graph
    constant, which these steps cannot give it: their KV buffers are mutated graph inputs."""
    for module in model.modules():
        if any(isinstance(v, torch.Tensor) and v.is_mkldnn for v in vars(module).values()):
            return ("compiled decoding steps do not support oneDNN-packed linears (the bf16 CPU path); "
                    "load the target with --dtype float32 to compile")
    return None


class StaticKV(Cache):
    """A transformers Cache whose layers write at `write_at` (positions [n]) instead of appending."""

    def __init__(self, config, capacity: int) -> None:
        layers = config.get_text_config().num_hidden_layers
        super().__init__(layers=[StaticLayer(max_cache_len=capacity) for _ in range(layers)])
        self.capacity = capacity
        self.write_at: torch.Tensor | None = None

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        layer = self.layers[layer_idx]
        if not layer.is_initialized:
            layer.lazy_initialization(key_states, value_states)  # marks the buffers as static addresses
        layer.keys.index_copy_(2, self.write_at, key_states)
        layer.values.index_copy_(2, self.write_at, value_states)
        return layer.keys, layer.values

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return 0  # positions and masks are always passed explicitly; nothing may infer them


class StaticModel:
    """One model with its static cache: eager prefill, and two fixed-shape calls that can be compiled.

    `step(tokens [1], pos [1]) -> logits [V_model]` (a draft step or a target-only step),
    `trunk(tokens [S], pos [S]) -> hidden [S, H]` for verification, and `tree(tokens [S], pos [S],
    slots [S], block [S, S]) -> hidden [S, H]` for a token tree's; the head is applied outside the
    trunk to the real rows only, so padding costs no vocabulary projection.
    """

    def __init__(self, model: PreTrainedModel, capacity: int, compile: bool = False, backend: str = "inductor",
                 min_capacity: int = MIN_CAPACITY) -> None:
        reason = static_support(model)
        if reason is not None:
            raise ValueError(reason)
        self.model = model
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.base = model.get_decoder()
        self.head = model.get_output_embeddings()
        self.cache_kwarg = cache_argument(type(self.base))
        self.compiled = compile
        self.min_capacity = min_capacity
        self.capacity = 0
        self.compile_seconds = 0.0  # first calls of each compiled shape: tracing, codegen, graph capture
        self._compiled_shapes: set[tuple[str, int]] = set()
        self.resize(capacity)
        self._step = self._eager_step
        self._trunk = self._eager_trunk
        self._tree = self._eager_tree
        if compile:
            # One graph per shape and per buffer size, for every model: more than dynamo's default 8.
            cfg = torch._dynamo.config
            name = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"  # renamed in 2.7
            setattr(cfg, name, max(getattr(cfg, name), 64))
            # reduce-overhead = inductor + CUDA graphs (on a CPU, inductor alone); other backends are for tests
            mode = "reduce-overhead" if backend == "inductor" else None
            self._step = torch.compile(self._eager_step, dynamic=False, backend=backend, mode=mode)
            self._trunk = torch.compile(self._eager_trunk, dynamic=False, backend=backend, mode=mode)
            self._tree = torch.compile(self._eager_tree, dynamic=False, backend=backend, mode=mode)

    def resize(self, capacity: int) -> None:
        """Buffers for at least `capacity` real positions; they never shrink (a new size recompiles)."""
        capacity = max(self.min_capacity, 1 << (capacity - 1).bit_length())
        if capacity <= self.capacity:
            return
        self.capacity = capacity
        self._compiled_shapes.clear()  # new buffers: the steps compile again, and that time is counted
        size = capacity + PAD_SLACK
        self.cache = StaticKV(self.model.config, size)
        self.positions = torch.arange(size, device=self.device)  # slices of it are the position inputs
        self.slots = torch.arange(size, device=self.device)
        torch._dynamo.mark_static_address(self.slots)

    @torch.inference_mode()
    def grow(self, capacity: int) -> None:
        """`resize` in mid-generation: what the cache holds is copied into the larger buffers."""
        old = self.cache
        self.resize(capacity)
        if self.cache is old:
            return
        for new, layer in zip(self.cache.layers, old.layers, strict=True):
            if layer.is_initialized:
                new.lazy_initialization(layer.keys, layer.values)
                new.keys[:, :, : layer.keys.shape[2]] = layer.keys
                new.values[:, :, : layer.values.shape[2]] = layer.values

    def _mask(self, pos: torch.Tensor) -> torch.Tensor:
        """Additive mask [1, 1, n, size]: query at position p sees slots 0..p, nothing stale after them."""
        visible = self.slots[None, :] <= pos[:, None]
        zero = torch.zeros((), dtype=self.dtype, device=self.device)
        return torch.where(visible, zero, torch.finfo(self.dtype).min)[None, None]

    def _tree_mask(self, slots: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
        """Additive mask [1, 1, S, size] for S rows written at the contiguous slots [S]: every row sees the
        slots before slots[0] (the committed context), then the fed rows block [S, S] lets it see."""
        visible = (self.slots[None, :] < slots[:1, None]).expand(len(slots), -1).index_copy(1, slots, block)
        zero = torch.zeros((), dtype=self.dtype, device=self.device)
        return torch.where(visible, zero, torch.finfo(self.dtype).min)[None, None]

    def _forward(self, tokens: torch.Tensor, pos: torch.Tensor, slots: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        self.cache.write_at = slots
        out = self.base(
            input_ids=tokens.view(1, -1), position_ids=pos.view(1, -1), attention_mask=mask,
            use_cache=True, **{self.cache_kwarg: self.cache},
        )
        return out.last_hidden_state[0]

    def _hidden(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self._forward(tokens, pos, pos, self._mask(pos))

    def _eager_step(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.head(self._hidden(tokens, pos))[-1]

    def _eager_trunk(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self._hidden(tokens, pos)

    def _eager_tree(self, tokens: torch.Tensor, pos: torch.Tensor, slots: torch.Tensor,
                    block: torch.Tensor) -> torch.Tensor:
        return self._forward(tokens, pos, slots, self._tree_mask(slots, block))

    @torch.inference_mode()
    def prefill(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Eager, any length: fill positions start .. start + len(tokens) - 1 -> their final-norm hidden [len, H]."""
        if not len(tokens):
            return torch.empty(0, self.model.config.get_text_config().hidden_size, dtype=self.dtype, device=self.device)
        return self._hidden(tokens, self.positions[start : start + len(tokens)])

    @torch.inference_mode()
    def step(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        """One token at position start -> logits [V_model]."""
        return self._call("step", self._step, tokens, self.positions[start : start + len(tokens)]).clone()

    @torch.inference_mode()
    def trunk(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        """tokens [S] (S in PADDED_SIZES) at positions start .. -> final-norm hidden [S, H] (the head is the
        caller's, on the real rows)."""
        return self._call("trunk", self._trunk, tokens, self.positions[start : start + len(tokens)])

    @torch.inference_mode()
    def verify(self, tokens: torch.Tensor, start: int, real: int) -> torch.Tensor:
        """tokens [S] (S in PADDED_SIZES, the first `real` of them real) -> logits [real, V_model]."""
        return self.head(self.trunk(tokens, start)[:real])

    @torch.inference_mode()
    def tree(self, tokens: torch.Tensor, start: int, pos: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
        """A token tree's pass: tokens [S] (S in PADDED_SIZES) written at slots start .., at positions pos [S];
        block [S, S] bool: the fed rows each row sees (its ancestors and itself). Every row also sees the
        slots before `start`. -> hidden [S, H] (final norm; the head is the caller's, on the real rows)."""
        return self._call("tree", self._tree, tokens, pos, self.slots[start : start + len(tokens)], block)

    @torch.inference_mode()
    def compact(self, past_len: int, path) -> None:
        """Keep past_len positions, then the accepted nodes `path` (node i at slot past_len + i) in order, by
        an index copy; the slots after them are stale and stay masked until a real token overwrites them."""
        k = len(path)
        if not k or list(path) == list(range(k)):  # an accepted prefix already sits in its slots
            return
        src = past_len + torch.as_tensor(list(path), dtype=torch.long, device=self.device)
        dst = torch.arange(past_len, past_len + k, device=self.device)
        for layer in self.cache.layers:
            layer.keys.index_copy_(2, dst, layer.keys.index_select(2, src))
            layer.values.index_copy_(2, dst, layer.values.index_select(2, src))

    def _call(self, kind: str, fn: Callable, tokens: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
        if not self.compiled:
            return fn(tokens, *args)
        key = (kind, len(tokens))
        first = key not in self._compiled_shapes
        t0 = time.perf_counter()
        torch.compiler.cudagraph_mark_step_begin()  # outputs of the previous replay may be overwritten
        out = fn(tokens, *args)
        if first:
            sync(self.device)
            self.compile_seconds += time.perf_counter() - t0
            self._compiled_shapes.add(key)
        return out
