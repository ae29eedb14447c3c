"""Linears with prepacked bfloat16 weights (oneDNN): each weight is read once a pass, for 1 to ~17 rows.

`F.linear` in float32 goes to MKL, which re-reads the weights once a pass has 4-5 rows, so verifying
γ + 1 tokens cost 1.6-2.2 target steps on a 2-core CPU. oneDNN with weights reordered once, at load,
into its blocked layout reads them once at about memory bandwidth for any row count measured
(docs/cpu-path.md). `pack_linears` swaps every `nn.Linear` of a module for a `PackedLinear` that holds
only the packed weight; the dense weight is freed. A packed row's output does not depend on how many
rows the pass has, so verifying n tokens gives the same logits as n single steps.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

PACK_HINTS = (1, 4, 8, 16)  # oneDNN's expected row count; it picks the blocking from it (measured, not guessed)


def packing_supported() -> bool:
    """oneDNN runs bf16 natively on this CPU (AVX512-BF16, AMX): without it a packed bf16 linear emulates."""
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


class PackedLinear(nn.Module):
    """y = x Wᵀ + b with W [out, in] held in oneDNN's packed bf16 layout; x and y are bf16 [..., in/out].

    `weight` unpacks a dense copy (or returns the tied embedding it was packed from): for the rare
    readers that need rows, such as a feature draft's reduced head, never for the forward.
    """

    _tied: torch.Tensor | None  # in __dict__, not registered: the embedding owns it
    packed: torch.Tensor

    def __init__(self, linear: nn.Linear, hint: int, tied: nn.Parameter | None = None) -> None:
        super().__init__()
        self.in_features, self.out_features, self.hint = linear.in_features, linear.out_features, hint
        dense = linear.weight.detach().to(torch.bfloat16)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(dense, hint)  # opaque, not a Parameter
        bias = linear.bias
        self.bias = None if bias is None else nn.Parameter(bias.detach().to(torch.bfloat16), requires_grad=False)
        # The input embedding this head shares its rows with, kept out of the module's parameters (it is the
        # embedding's own, registered there).
        self.__dict__["_tied"] = tied

    @property
    def weight(self) -> torch.Tensor:
        return self._tied if self._tied is not None else self.packed.to_dense()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # A packed model's state dict holds dense weights, so target layers still copy into a feature
        # draft (init_from_target) and the model can be saved.
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = self.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return packed_linear(x.to(torch.bfloat16), self.packed, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bf16 packed (hint {self.hint})"


def packed_linear(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x [..., in] bf16 -> [..., out] through a packed weight; one row runs as two (a zero row added).

    oneDNN takes another kernel for a single row, which sums in another order: its outputs then differ
    by an ulp from the same row inside a verify pass (measured at 1536 inputs for every hint), and
    greedy speculative output drifts from target-only greedy. From two rows on, every row comes out
    bit-identical whatever the row count (kernels.rows_independent checks it at load, row_probe the whole pass).
    """
    if x.numel() == x.shape[-1]:  # one row
        two = F.pad(x.reshape(1, -1), (0, 0, 0, 1))
        return torch.ops.mkldnn._linear_pointwise(two, packed, bias, "none", [], "")[:1].view(*x.shape[:-1], -1)
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def pack_linear(linear: nn.Linear, hint: int, tied: nn.Parameter | None = None) -> PackedLinear:
    return PackedLinear(linear, hint, tied)


@torch.no_grad()
def pack_linears(model: Any, hint: int) -> int:
    """Replace every nn.Linear in model (the head included) by a PackedLinear, in place; returns how many.

    The model must already be bf16 (`model.to(torch.bfloat16)`), so its norms, attention and
    embedding run in the linears' dtype. A head tied to the input embedding gets its own packed copy;
    the embedding stays a plain bf16 lookup.
    """
    embed = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    tied_weight = getattr(embed, "weight", None)
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                tied = tied_weight if tied_weight is not None and child.weight is tied_weight else None
                assert tied is None or isinstance(tied, nn.Parameter)
                setattr(parent, name, pack_linear(child, hint, tied))
                count += 1
    return count


def hint_of(model: nn.Module) -> int | None:
    """The packing hint of a packed model's linears; None when none is packed."""
    return next((m.hint for m in model.modules() if isinstance(m, PackedLinear)), None)


def weight_count(model: Any) -> int:
    """Parameters including packed linear weights (which are not Parameters), without tied duplicates; a light
    native model's, as transformers' model of it counted them."""
    from app.native.model import is_native

    if is_native(model):
        return model.weight_count
    dense = sum(p.numel() for p in model.parameters())
    packed = sum(m.in_features * m.out_features for m in model.modules()
                 if isinstance(m, PackedLinear) and m._tied is None)
    return dense + packed
