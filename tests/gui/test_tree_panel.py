"""The step-through draws a token-tree round: the accepted path, rejected siblings struck through with
u against p′ and the residual, the corrected or bonus token; a chain round shows no tree. The token
inspector names a tree token's branch."""

from __future__ import annotations

import torch
from PySide6.QtGui import QTextDocumentFragment
from tiny_models import noisy_copy, tiny_model

from app.engine import DecodeParams, ModelDrafter, generate
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter
from app.gui.step_view import StepThrough
from app.gui.theme import LIGHT
from app.gui.token_format import describe
from app.history.records import StoredToken

PROMPT = torch.tensor([0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9])


def test_a_tree_round_is_drawn_and_a_chain_round_is_not(qtbot):
    target = tiny_model()
    draft = noisy_copy(target, 1.5)
    tree = UnionTreeDrafter(ModelTreeDrafter(draft, budget=6, depth=3, top_k=3), LookupTreeDrafter(budget=3))
    result = generate(target, PROMPT, tree, DecodeParams(gamma=3, temperature=1.0, max_new_tokens=40, seed=5))
    chain = generate(target, PROMPT, ModelDrafter(draft), DecodeParams(gamma=3, max_new_tokens=8, seed=0))
    step = StepThrough(LIGHT)
    qtbot.addWidget(step)
    step.show()
    step.add_events(result.tokens + result.rejected + result.rounds)
    shown = set()
    for i, r in enumerate(step.rounds):
        step.show_round(i)
        text = step.tree.body.text()
        assert step.tree.isVisible() and f"{r.tree_nodes} nodes verified" in step.tree.title.text()
        assert text.count("<b style") == len(r.tree_path) + 1  # the path, then the new token
        rejected = len(r.tree_tested) - len(r.tree_path)
        assert text.count("<s ") == rejected and text.count("residual") == rejected
        assert text.count("not tested") == r.tree_nodes - len(r.tree_tested)
        shown_lines = QTextDocumentFragment.fromHtml(text).toPlainText().splitlines()
        assert len(shown_lines) == text.count("<br>") + 1  # the accepted test's "<" opens no tag eating lines
        assert sum(" < p′ " in line for line in shown_lines) == len(r.tree_path)
        shown.add("corrected" if "corrected" in text.rsplit("<br>", 1)[-1] else "bonus")
    assert shown == {"corrected", "bonus"}
    step.clear()
    step.add_events(chain.tokens + chain.rejected + chain.rounds)
    step.show_round(0)
    assert not step.tree.isVisible()
    node = next(t for t in result.tokens if t.node is not None)
    assert f"node {node.node + 1}" in describe(StoredToken.from_event(node))
    assert "node" not in describe(StoredToken.from_event(chain.tokens[0]))


def test_the_tree_is_legible_at_presentation_size(qtbot):
    """At 28 pt (presentation mode's text size) the tree's text is 28 pt and a tall tree scrolls inside
    its panel, beside the cards at the step-through's height, instead of pushing the positions off it."""
    target = tiny_model()
    tree = ModelTreeDrafter(noisy_copy(target, 1.5), budget=16, depth=3, top_k=4)
    result = generate(target, PROMPT, tree, DecodeParams(gamma=3, temperature=1.0, max_new_tokens=12, seed=2))
    step = StepThrough(LIGHT)
    qtbot.addWidget(step)
    step.resize(1354, 400)
    step.show()
    step.add_events(result.tokens + result.rejected + result.rounds)
    step.tree.set_point_size(28)
    step.show_round(1)
    body = step.tree.body
    body.ensurePolished()
    assert body.font().pointSize() == 28 and step.tree.title.font().pointSize() == 28
    lines = body.text().count("<br>") + 1
    assert lines * body.fontMetrics().lineSpacing() > step.height()  # 16 nodes and the new token
    qtbot.waitUntil(lambda: step.tree.lines.verticalScrollBar().isVisible())
    assert step.tree.height() == step.cards.height() == step.split.height()
    assert not step.cards.verticalScrollBar().isVisible() and not step.cards.horizontalScrollBar().isVisible()
