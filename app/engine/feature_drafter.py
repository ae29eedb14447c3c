"""The feature drafter: chain drafting from the target's own features with an FR-Spec reduced head.

The draft reads the target's final-norm hidden states f_j of committed positions, which the verify
pass returns for the positions it keeps (no second target pass). At position j the network (see
feature_net) gives g_j ~ f_{j+1}; later draft steps feed g back as the feature. Logits are taken
against the target's own output rows for a subset of K frequent tokens; q is scattered into a
full-vocabulary distribution that is zero outside the subset, so `accept` and its residual stay
exact (the residual carries the excluded tokens).

State: the draft cache only ever holds positions whose feature came from the target ("stable");
speculative entries are cropped after every round, and the features of rejected positions are never
handed over.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from .drafters import chain_controller, unsupported_on_static
from .feature_net import DraftCache, FeatureDraftModel, draft_forward
from .feature_tree import FeatureTreeDrafter
from .sampling import DecodeParams, logits_to_probs, on_subset, sample
from .tree_drafters import TREE_TOP_K


class FeatureDrafter:
    """The Drafter for a feature draft. The round runner hands it the target's features through `commit`.

    Positions: the context has N tokens; the target has features for positions 0..N-2 (the newest
    token has not been through it yet). `stable` counts the positions in the draft cache, all fed with
    target features; `pending` holds committed features not yet fed.
    """

    wants_features = True
    proposes: Literal["chain"] = "chain"

    def __init__(self, model: FeatureDraftModel, target, name: str = "feature draft",
                 min_confidence: float | None = None) -> None:
        self.model = model.eval()
        self.name = name
        self.embed = target.get_input_embeddings()
        head = target.get_output_embeddings().weight
        self.device = head.device
        self.dtype = head.dtype
        self.rotary = target.base_model.rotary_emb
        rows = head.detach()[model.vocab_ids].to(self.dtype)  # [K, H]
        # The reduced head as a module, so a CPU path can swap in packed kernels (app.machine.packed).
        self.reduced_head = nn.Linear(rows.shape[1], rows.shape[0], bias=False, device="meta")
        self.reduced_head.weight = nn.Parameter(rows, requires_grad=False)
        self.min_confidence = model.cfg.min_confidence if min_confidence is None else min_confidence
        self.generator = torch.Generator(device=self.device)
        self.begin()

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def begin(self) -> None:
        self.cache = DraftCache()
        self.stable = 0
        self.pending = torch.empty(0, self.model.cfg.hidden_size, device=self.device, dtype=self.dtype)

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        """Keep the target-fed positions below `kept` and queue the target's features [k, H] of positions
        start..start+k-1 to be fed at the next draft."""
        # Only target-fed positions survive: speculative entries (fed with g) go whatever was accepted.
        self.cache.length = min(self.stable, kept)
        if start != self.cache.length + len(self.pending):
            raise RuntimeError(f"features for position {start} arrived, expected {self.cache.length + len(self.pending)}")
        if features is None:
            raise RuntimeError("a feature draft's commit came without the target's features")
        self.pending = torch.cat([self.pending, features.to(self.dtype)])

    def static_form(self):
        raise unsupported_on_static(self)

    def tree_form(self, budget: int, depth: int) -> FeatureTreeDrafter:
        """EAGLE-2's expansion over the draft's own layer, sharing this drafter's cache and features."""
        return FeatureTreeDrafter(self, budget, depth, TREE_TOP_K)

    def chain_form(self) -> FeatureDrafter:
        return self

    controller = chain_controller

    @torch.inference_mode()
    def catch_up(self, ids: torch.Tensor, ids_list: list[int]) -> torch.Tensor | None:
        """Feed the pending pairs (f_j, t_{j+1}) of committed positions: g [1, H] of the newest, ~ its
        target feature (the start of a chain or a tree); None on the first round, before any feature."""
        start = self.cache.length
        n_ctx = len(ids_list)
        self.stable = start
        if len(self.pending) == 0:  # the first round: the prompt has not been through the target yet
            return None
        if start + len(self.pending) != n_ctx - 1:
            raise RuntimeError(f"the draft holds features up to {start + len(self.pending)} for a {n_ctx}-token context")
        tokens = ids[start + 1 : n_ctx].to(self.device)
        g = draft_forward(self.model, self.rotary, self.embed(tokens), self.pending, self.cache)[-1:]
        self.stable = self.cache.length
        self.pending = self.pending[:0]
        return g

    @torch.inference_mode()
    def draft(self, ids, ids_list, gamma, params: DecodeParams, vocab_size):
        g = self.catch_up(ids, ids_list)
        if g is None:
            return ids.new_empty(0), torch.empty(0, vocab_size, device=ids.device)
        # gamma - 1 steps after the catch-up, feeding g back as the feature.
        ids_k = self.model.vocab_ids
        out_tokens, qs = [], []
        for i in range(gamma):
            logits = self.reduced_head(g)[0]  # [K]
            if i > 0 and self.min_confidence > 0 and float(logits.float().softmax(-1).max()) < self.min_confidence:
                break  # decided from q_i before drawing x_i, so the proposal stays exact
            q_k = logits_to_probs(logits, params)  # [K]; same transform as p, zero outside the subset
            j = sample(q_k, self.generator, params.greedy)
            x_i = ids_k[j]
            q_i = on_subset(q_k, ids_k, vocab_size)
            out_tokens.append(x_i)
            qs.append(q_i)
            if i + 1 < gamma:
                g = draft_forward(self.model, self.rotary, self.embed(x_i.view(1)), g, self.cache)
        return torch.stack(out_tokens), torch.stack(qs)
