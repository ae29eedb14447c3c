"""Turn a draft spec into a drafter for a loaded target (through the registry, app.drafting.registry), and the
factories of the kinds that live here: target-only, prompt lookup, the self-draft and a draft model, with the
rules by which auto weighs the self-draft and the embedded model (the registry's AutoRule lines)."""

from __future__ import annotations

import copy
from dataclasses import replace

import torch

from app.drafting.compat import check_tokenizers, ensure_compatible
from app.drafting.registry import SELF_DRAFT, kind_of
from app.engine import ModelDrafter, PromptLookupDrafter
from app.engine.protocols import Drafter
from app.errors import ModelError
from app.machine import profile as machine_profile
from app.machine import torch_path
from app.machine.packed import weight_count
from app.models import memory
from app.models.devices import reduced_dtype
from app.models.embedded import DEFAULT_SPEC
from app.models.loading import LoadedModel, load_model
from app.models.rows import output_rows
from app.native.draft_blocks import as_draft
from app.native.model import is_native

DEFAULT_TREE_NODES = 16  # a tree's node budget without a measurement (--tree on, the race of tree against chain)
SELF_DRAFT_MAX_PARAMS = 600_000_000  # a reduced copy of a larger target costs too much memory for auto to try


def self_draft_dtype(target: LoadedModel) -> torch.dtype | None:
    """The dtype of the target's self-draft; None on a CPU where the target already runs in the cheapest."""
    if is_native(target.model):
        return None  # the native path already reads 4- and 8-bit blocks: no cheaper copy of it exists
    dtype = reduced_dtype(target.dtype, target.device)
    return None if target.device.type == "cpu" and dtype == target.dtype else dtype


def self_draft(target: LoadedModel) -> ModelDrafter:
    """A reduced-precision copy of the target: shares no tensors, so nothing mutable is shared. On a CPU
    its linears take the fastest path for its dtype (torch_path.choose_path), packed where that pays: timed
    once and kept in the target's machine profile (the caller writes it back)."""
    dtype = self_draft_dtype(target)
    if dtype is None:
        raise ModelError(f"{target.name} already runs in {target.kernels}, the cheapest form here, "
                         "so a self-draft would cost a full target step; load the target with --dtype float32 "
                         "for a bf16 self-draft")
    parameters = weight_count(target.model)
    memory.plan(memory.weight_bytes(parameters, dtype), target.device, f"the self-draft of {target.name}")
    model = copy.deepcopy(target.model).to(dtype).eval()
    if target.device.type == "cpu":
        known = machine_profile.Reuse(target.profile).part("draft_kernels")
        choice = torch_path.choose_path(model, dtype, known=known)
        model = torch_path.apply_path(model, choice.path)
        if target.profile is not None:
            target.profile = replace(target.profile, draft_kernels=choice)
    return ModelDrafter(model, name=f"{target.name} ({str(dtype).removeprefix('torch.')} self-draft)")


# A conversation that makes a chat template place every special token it uses between turns.
_TEMPLATE_PROBE = ({"role": "system", "content": "a"}, {"role": "user", "content": "b"},
                   {"role": "assistant", "content": "c"}, {"role": "user", "content": "d"})


def template_tokens(target: LoadedModel) -> frozenset[int]:
    """The special tokens the target's chat template places (`<|im_start|>`, `<|im_end|>`, ...): a lookup
    never proposes them, since the target does not emit them inside an answer."""
    tokenizer = target.tokenizer
    special = set(getattr(tokenizer, "all_special_ids", None) or ())
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    special |= {i for i, token in added.items() if getattr(token, "special", False)}
    if not special:
        return frozenset()
    for probe in (_TEMPLATE_PROBE, _TEMPLATE_PROBE[1:]):  # some templates refuse a system turn
        try:
            ids = target.encode_chat(list(probe)).tolist()
        except Exception:  # a template that raises on this conversation: try the next one
            continue
        return frozenset(i for i in ids if i in special)
    return frozenset()


def make_drafter(spec: str | None, target: LoadedModel, **load_kwargs) -> Drafter | None:
    """The chain drafter `spec` names for `target` (app.drafting.registry.KINDS; its token-tree form is its own
    `tree_form`), None for target-only. "trained" picks
    the best trained feature draft for the target, and a folder written by `speclens distill` loads that
    draft (both refuse a draft made for another target). A model spec is loaded (on the target's device
    unless device= is given) and must pass the compatibility pre-flight, else IncompatibleModels."""
    if not spec:
        return None
    return kind_of(spec).build(spec, target, **load_kwargs)


def target_only(spec: str, target: LoadedModel, **load_kwargs) -> None:
    return None


def by_measurement(spec: str, target: LoadedModel, **load_kwargs) -> None:
    # a choice by measurement, not a model: never looked up on the hub as an id
    raise ValueError("draft 'auto' is chosen by measurement (app.drafting.auto.select), not loaded")


def prompt_lookup(spec: str, target: LoadedModel, **load_kwargs) -> PromptLookupDrafter:
    return PromptLookupDrafter(never=template_tokens(target))


def self_draft_of(spec: str, target: LoadedModel, **load_kwargs) -> ModelDrafter:
    return self_draft(target)


def model_draft(spec: str, target: LoadedModel, **load_kwargs) -> ModelDrafter:
    """A draft model on the native path with the fastest digits and its matrices as Q4_0 (app.native.draft_blocks):
    a draft's precision changes only α, never the output."""
    load_kwargs.setdefault("device", target.device)
    load_kwargs.setdefault("draft", True)  # the fastest native digits: a draft's precision changes only α
    draft = load_model(spec, **load_kwargs)
    ensure_compatible(target, draft)
    model = draft.model
    if is_native(model):
        model = as_draft(model, use_cache=load_kwargs.get("use_cache", True))
    return ModelDrafter(model, name=draft.name)


# --- what auto weighs (the registry's AutoRule lines) -----------------------------------------------
def self_draft_candidates(target: LoadedModel) -> list[str]:
    """The self-draft, for a target small enough to copy that has a cheaper dtype to copy it in."""
    fits = weight_count(target.model) <= SELF_DRAFT_MAX_PARAMS and self_draft_dtype(target) is not None
    return [SELF_DRAFT] if fits else []


def embedded_candidates(target: LoadedModel) -> list[str]:
    """The embedded model (SmolLM2-135M), for a larger target that shares its tokenizer."""
    return [DEFAULT_SPEC] if target.spec != DEFAULT_SPEC and embedded_fits(target) else []


def model_candidates(target: LoadedModel) -> list[str]:
    """The draft models auto weighs: the embedded model for a larger target of its family, then the compatible
    draft models the user has (beside the target's file, the real pair's download, the hub cache:
    app.drafting.local_drafts)."""
    from app.drafting.local_drafts import local_draft_candidates

    embedded = embedded_candidates(target)
    return embedded + [s for s in local_draft_candidates(target) if s not in embedded]


def embedded_fits(target: LoadedModel) -> bool:
    """The embedded SmolLM2-135M drafts for a larger target that shares its tokenizer."""
    from app.drafting.catalog import _tokenizer

    if weight_count(target.model) <= 2 * 135_000_000:
        return False  # not larger: the embedded model would cost about a target step
    mine = _tokenizer(DEFAULT_SPEC)
    if mine is None:
        return False
    rows = output_rows(target.model)
    return check_tokenizers(target.tokenizer, mine[0], target_rows=rows, draft_rows=mine[1]).compatible
