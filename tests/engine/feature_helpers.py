"""Tiny feature drafts for the engine tests: random weights started from the target's last layer."""

from __future__ import annotations

import torch

from app.distill.init_draft import init_from_target
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_format import FeatureDraftConfig
from app.engine.feature_net import FeatureDraftModel


def random_feature_draft(target, vocab_k: int, seed: int = 0, noise: float = 0.5) -> FeatureDraftModel:
    """A feature draft over the first vocab_k token ids (the rest are outside its head: q = 0 there), started
    from the target's last layer where the target has its layers (a native target keeps none: random)."""
    cfg = FeatureDraftConfig.for_target(target, n_layers=1, vocab_k=vocab_k)
    torch.manual_seed(seed)
    draft = FeatureDraftModel(cfg)
    if hasattr(target.base_model, "layers"):
        init_from_target(draft, target)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(torch.randn_like(p) * noise * p.std().clamp_min(1e-3))
        draft.vocab_ids.copy_(torch.arange(vocab_k))
    return draft.eval()


def feature_drafter(target, vocab_k: int, **kw) -> FeatureDrafter:
    return FeatureDrafter(random_feature_draft(target, vocab_k, **kw), target)
