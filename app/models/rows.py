"""How many rows a model's embedding and output head have, read without touching their weights (a native
model makes its float rows only when something reads them: native/model.py's KernelRows)."""

from __future__ import annotations


def output_rows(model) -> int:
    head = model.get_output_embeddings()
    rows = getattr(head, "out_features", None)
    return int(rows) if rows is not None else int(head.weight.shape[0])


def input_rows(model) -> int:
    embed = model.get_input_embeddings()
    rows = getattr(embed, "num_embeddings", None)
    return int(rows) if rows is not None else int(embed.weight.shape[0])
