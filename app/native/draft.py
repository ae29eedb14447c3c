"""A feature draft beside a native target: its linears (fc, the layer's projections, the reduced head) as
Q8_0 blocks through the same kernel call as the target's head, the rest (norms, rotary, attention over
the draft's own small cache) left in torch float32.

Why: on torch float32 a drafted token cost about one native target step (the 8192-row head alone 1.4 ms,
the layer 1.4 ms, 2026-12-03, docs/engine-notes.md), so the trained draft could never pay on the path
that is fastest on a CPU. The draft's q is whatever these linears give: acceptance reads the q the draft
sampled from, so output stays exact (tests/engine/test_native_draft.py checks the joint law and greedy).
"""

from __future__ import annotations

import torch
from torch import nn

from app.native import active_build, blocks, thread_count


class NativeLinear(nn.Module):
    """y = x W^T (+ b) with W as Q8_0 blocks: any leading shape, float32 out."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.kernel = active_build()
        if self.kernel is None:
            raise RuntimeError("the native kernel is not available on this machine")
        self.mat = blocks.from_float(linear.weight)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bias = None if linear.bias is None else linear.bias.detach().float()
        self.native = self.mat.native(self.kernel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A drafted token's linears are 3-50 us of kernel: the Python around the call is kept to a minimum.
        if x.dtype != torch.float32 or not x.is_contiguous() or x.requires_grad:
            x = x.detach().float().contiguous()
        out = x.new_empty(*x.shape[:-1], self.mat.n)  # [..., n padded to 16]
        self.kernel.matmul(self.native, x.numpy(), out.numpy(), thread_count())
        if self.mat.n != self.out_features:
            out = out[..., : self.out_features]
        return out if self.bias is None else out + self.bias


def fits(linear: nn.Linear) -> bool:
    """The kernel reads inputs in blocks of 32."""
    return linear.in_features % blocks.BLOCK == 0


def native_linears(module: nn.Module) -> int:
    """Replace every nn.Linear under module whose inputs fit the kernel by a NativeLinear (in place);
    returns how many."""
    count = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear and fits(child):
                setattr(parent, name, NativeLinear(child))
                count += 1
    return count


def native_feature_drafter(drafter):
    """A FeatureDrafter whose draft network and reduced head run on the native kernel (in place)."""
    native_linears(drafter.model)
    if fits(drafter.reduced_head):
        drafter.reduced_head = NativeLinear(drafter.reduced_head)
    return drafter
