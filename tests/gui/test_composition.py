"""The window's flows are handed what they need (issue #26): no flow takes the window, reaches a private
name of another object, or reads another flow's attributes (it calls their public methods). Checked on
the source, with a planted twin that shows each rule catches its breach."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUI = ROOT / "app" / "gui"
# The flows and the parts composed with them. Not here: the composition root (main_window) and the parts
# whose job is the window itself (window_layout, menus, window_settings, presentation's layout), the
# entry points that drive a whole window (app, screenshot), and the widgets.
FLOWS = sorted(GUI.glob("*_flow.py")) + [GUI / f"{name}.py" for name in (
    "answer_recorder", "examples", "queued_question", "send_buttons", "speculation_offer", "status")]


def flow_classes() -> dict[str, type]:
    """The attribute names flows are held under, and their classes."""
    from app.gui.answer_flow import AnswerFlow
    from app.gui.chat_flow import ChatFlow
    from app.gui.compile_flow import CompileFlow
    from app.gui.history_flow import HistoryFlow
    from app.gui.model_flow import ModelFlow
    from app.gui.race_flow import RaceFlow
    from app.gui.recording_flow import RecordingFlow

    return {"answers": AnswerFlow, "chat_flow": ChatFlow, "compile": CompileFlow, "history": HistoryFlow,
            "model_flow": ModelFlow, "race": RaceFlow, "recordings": RecordingFlow}


def breaches(source: str, flows: dict[str, type]) -> list[str]:
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            handed = [*node.args.args, *node.args.kwonlyargs]
            found += [f"takes the window: {a.arg}" for a in handed if a.arg in ("window", "w")]
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr == "window":
            found.append(f"line {node.lineno}: .window")
        owner = node.value
        if node.attr.startswith("_") and not node.attr.startswith("__") and not (
                isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
            found.append(f"line {node.lineno}: private {node.attr}")
        if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self" \
                and owner.attr in flows:
            member = inspect.getattr_static(flows[owner.attr], node.attr, None)
            if not inspect.isfunction(member):  # a method, called or handed on as a slot; never a field
                found.append(f"line {node.lineno}: reads {owner.attr}.{node.attr}")
            elif isinstance(parents.get(node), ast.Attribute):
                found.append(f"line {node.lineno}: reaches into {owner.attr}.{node.attr}")
    return found


def test_no_flow_takes_the_window_or_reaches_into_another():
    flows = flow_classes()
    assert len(FLOWS) == 15 and all(path.is_file() for path in FLOWS)
    found = {path.name: breaches(path.read_text(encoding="utf-8"), flows) for path in FLOWS}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_check_catches_each_breach():
    """Planted: the reaches issue #26 found (a window handed in, another flow's field read through it, a
    private slot called across), and a flow's field read directly."""
    planted = '''
class Planted:
    def __init__(self, window, answers):
        self.window, self.answers = window, answers

    def start(self):
        conv_id = self.window.chat_flow.conv_id
        self.window.chat_flow._flush()
        self.answers.flush_timer.start()
        self.answers.begin(None)
'''
    found = breaches(planted, flow_classes())
    assert "takes the window: window" in found
    assert any(".window" in f for f in found) and any("private _flush" in f for f in found)
    assert any("reads answers.flush_timer" in f for f in found)
    assert not any("answers.begin" in f for f in found)  # a public method of a flow handed in is fine
    keyword = "class Planted:\n    def __init__(self, *, window: object, answers: object) -> None:\n        pass\n"
    assert "takes the window: window" in breaches(keyword, flow_classes())


WIDE = ("chat_flow", "model_flow", "race_flow")  # the flows with a dozen collaborators (issue 38)


def untyped_or_positional(source: str, cls: str) -> list[str]:
    """The collaborators of cls.__init__ handed by position or without a type (self and parent aside)."""
    init = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef) and node.name == cls)
    init = next(node for node in init.body if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    positional = [f"by position: {a.arg}" for a in init.args.args[1:]]
    untyped = [f"untyped: {a.arg}" for a in init.args.kwonlyargs if a.annotation is None]
    return positional + untyped


def test_wide_flows_take_typed_keyword_collaborators():
    """A dozen collaborators handed by position were a bug waiting to happen: each is named and typed."""
    classes = {"chat_flow": "ChatFlow", "model_flow": "ModelFlow", "race_flow": "RaceFlow"}
    found = {name: untyped_or_positional((GUI / f"{name}.py").read_text(encoding="utf-8"), classes[name])
             for name in WIDE}
    assert {name: f for name, f in found.items() if f} == {}
    planted = "class Planted:\n    def __init__(self, model, *, store, status: object) -> None:\n        pass\n"
    assert untyped_or_positional(planted, "Planted") == ["by position: model", "untyped: store"]
