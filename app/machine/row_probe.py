"""Whether a CPU path keeps every row of a pass equal to its single step, checked in the model's own shapes.

Greedy speculation equals target-only greedy only if a verify pass of n rows gives each row, bit for
bit, the logits its single step gives. `kernels.rows_independent` checks each linear alone; this checks
the whole forward (linears, attention, norms, rotary) on a random-weight twin of the model with
PROBE_LAYERS layers, because oneDNN and PyTorch's CPU attention pick kernels by row count, batch and
instruction set, and what holds on one CPU need not hold on another (a CI machine of another kind ran
the embedded model's bf16 path with verify rows a few ulps off its single steps, though every linear
alone passed). Random weights suffice: a kernel's summation order follows the shapes, not the values.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch
from torch import nn
from transformers.initialization import no_init_weights

from app.engine.kv import forward, new_cache
from app.machine import threads

if TYPE_CHECKING:  # transformers' model classes stay out of a light native launch
    from transformers import PreTrainedModel

PROBE_LAYERS = 2
PREFIX = 7  # cached tokens before the passes
PASSES = (2, 5, 9, 17)  # verify rows: a short chain, auto's longest γ + 1, a 16-node tree's pass


def twin(model: PreTrainedModel, layers: int = PROBE_LAYERS) -> PreTrainedModel:
    """A float32 model of the same class and shapes with `layers` layers and seeded random weights (biases, where
    a family has them, are 1 too: a row's exactness follows its shapes, not its values)."""
    config = copy.deepcopy(model.config)
    text = config.get_text_config()
    text.num_hidden_layers = min(layers, text.num_hidden_layers)
    if getattr(text, "layer_types", None):
        text.layer_types = text.layer_types[: text.num_hidden_layers]
    with no_init_weights():  # filled below, with a generator of its own: the global seed stays the caller's
        made = type(model)(config).float().eval()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in made.parameters():  # as transformers initialises: norms 1, matrices N(0, 0.02)
            if parameter.dim() == 1:
                parameter.fill_(1.0)
            else:
                parameter.copy_(torch.randn(parameter.shape, generator=gen) * 0.02)
    return made


def row_mismatch(model: nn.Module) -> str | None:
    """None when, at every thread count a load may choose, every row of a pass equals its single step and a
    prefill's rows equal both; else where not. Threads count: oneDNN splits small passes differently by
    thread count, so a path exact at one count need not be at another. model: already on the path."""
    before = torch.get_num_threads()
    try:
        for count in threads.possible():
            torch.set_num_threads(count)
            if (why := _mismatch(model)) is not None:
                return f"{why} at {count} thread{'s' * (count > 1)}"
    finally:
        torch.set_num_threads(before)
    return None


@torch.inference_mode()
def _mismatch(model: PreTrainedModel) -> str | None:
    vocab = model.get_output_embeddings().out_features
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(vocab, (PREFIX + sum(PASSES),), generator=gen)
    steps = new_cache(model)
    forward(model, steps, ids[:PREFIX], keep=1)
    single = torch.cat([forward(model, steps, ids[i : i + 1], keep=1) for i in range(PREFIX, len(ids))])
    passes = new_cache(model)
    forward(model, passes, ids[:PREFIX], keep=1)
    at = PREFIX
    for n in PASSES:
        rows = forward(model, passes, ids[at : at + n], keep=n)
        if not torch.equal(rows, single[at - PREFIX : at - PREFIX + n]):
            return f"a {n}-row pass differs from its single steps"
        at += n
    prefill = forward(model, new_cache(model), ids, keep=len(ids) - PREFIX)
    if not torch.equal(prefill, single):
        return f"a {len(ids)}-token prefill differs from single steps"
    return None
