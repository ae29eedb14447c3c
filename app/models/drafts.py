"""Turn a draft spec into a Drafter for a loaded target, and a chain drafter into its token-tree form."""

from __future__ import annotations

import copy

from app.engine import Drafter, ModelDrafter, PromptLookupDrafter
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_tree import FeatureTreeDrafter
from app.engine.policy import TREE_DEPTH
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter
from app.engine.tree_rounds import TreeDrafter

from . import memory
from .compat import ensure_compatible
from .devices import reduced_dtype
from .loading import LoadedModel, load_model
from .specs import NO_DRAFT, PROMPT_LOOKUP, SELF_DRAFT, TRAINED_DRAFT
from .trained_drafts import find_trained_draft, is_trained_draft, load_trained_draft


def self_draft(target: LoadedModel) -> ModelDrafter:
    """A reduced-precision copy of the target: shares no tensors, so nothing mutable is shared."""
    dtype = reduced_dtype(target.dtype, target.device)
    parameters = sum(p.numel() for p in target.model.parameters())
    memory.plan(memory.weight_bytes(parameters, dtype), target.device, f"the self-draft of {target.name}")
    model = copy.deepcopy(target.model).to(dtype).eval()
    return ModelDrafter(model, name=f"{target.name} ({str(dtype).removeprefix('torch.')} self-draft)")


def make_drafter(spec: str | None, target: LoadedModel, **load_kwargs) -> Drafter | None:
    """None for target-only decoding. "trained" picks the best trained feature draft for the target, and a
    folder written by `speclens distill` loads that draft (both refuse a draft made for another target).
    A model spec is loaded (on the target's device unless device= is given) and must pass the
    compatibility pre-flight, else IncompatibleModels."""
    if spec in (None, "", NO_DRAFT):
        return None
    if spec == PROMPT_LOOKUP:
        return PromptLookupDrafter()
    if spec == SELF_DRAFT:
        return self_draft(target)
    if spec == TRAINED_DRAFT:
        return load_trained_draft(find_trained_draft(target), target)
    if is_trained_draft(spec):
        return load_trained_draft(spec, target)
    load_kwargs.setdefault("device", target.device)
    draft = load_model(spec, **load_kwargs)
    ensure_compatible(target, draft)
    return ModelDrafter(draft.model, name=draft.name)


TREE_TOP_K = 4  # children tried per frontier node when a draft model expands a tree (EAGLE-2 uses 10 on a GPU)


def tree_form(drafter: Drafter, nodes: int, depth: int = TREE_DEPTH) -> TreeDrafter | None:
    """The same draft proposing a token tree of `nodes` nodes and `depth` levels: prompt lookup as a
    trie of every match, a feature or model draft by EAGLE-2 expansion. None for a drafter with no tree
    form. The tree form shares the chain drafter's model (and a feature draft its state)."""
    if isinstance(drafter, PromptLookupDrafter):
        return LookupTreeDrafter(nodes, depth, drafter.max_ngram, drafter.min_ngram)
    if isinstance(drafter, FeatureDrafter):
        return FeatureTreeDrafter(drafter, nodes, depth, TREE_TOP_K)
    if isinstance(drafter, ModelDrafter):
        return ModelTreeDrafter(drafter.model, nodes, depth, TREE_TOP_K, name=f"{drafter.name} tree")
    return None
