"""The starting weights of a feature draft before training: copied from the target's last layers."""

from __future__ import annotations

import torch

from app.engine.feature_net import FeatureDraftModel


def init_from_target(draft: FeatureDraftModel, target, layer_index: int | None = None) -> None:
    """Copy target decoder layers (the last ones by default) into the draft's layers, and its final norm.

    fc starts as the identity on the feature half, so before training g_j is the target's last
    layer applied to (roughly) its own feature: a start that trains faster than random weights.
    """
    layers = target.base_model.layers
    n = draft.cfg.n_layers
    start = len(layers) - n if layer_index is None else layer_index
    with torch.no_grad():
        for i, layer in enumerate(draft.layers):
            source = layers[start + i].state_dict()
            own = layer.state_dict()
            layer.load_state_dict({k: v for k, v in source.items() if k in own}, strict=False)
        draft.norm.copy_(target.base_model.norm.weight)
        h = draft.cfg.hidden_size
        draft.fc.weight.mul_(0.1)
        draft.fc.weight[:, h:] += torch.eye(h)
