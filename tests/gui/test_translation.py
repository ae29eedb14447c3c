"""The Simplified Chinese UI: every visible string of the main window, the step-through and the lab goes
through Qt's translation, and the shipped font subset covers every character the translation uses."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pyqtgraph as pg
import pytest
from gui_helpers import Recorder, send
from PySide6.QtGui import QAction, QRawFont
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QDockWidget,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QTextEdit,
    QWidget,
)

from app.drafting.registry import NO_DRAFT
from app.gui import i18n
from app.gui.answer_header import draft_name
from app.gui.controls import AUTO, BROWSE_DIR, BROWSE_GGUF
from app.paths import resource_path

UI_ENTRIES = (AUTO, BROWSE_DIR, BROWSE_GGUF, NO_DRAFT)
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
WORD = re.compile(r"[A-Za-z][A-Za-z_]{2,}")
# Names and notation that stay as they are in Chinese.
ALLOWED = {
    "SpecLens", "English", "CPU", "GPU", "CUDA", "MPS", "HTML", "Markdown", "PNG", "SVG", "CSV", "GGUF", "gguf",
    "Top", "min", "max", "norm", "tok", "Ctrl", "Enter", "Esc", "float", "bfloat", "save_pretrained", "HF_HUB_OFFLINE",
    "Hugging", "Face", "Hub", "nbsp", "span", "style", "color", "code", "sub", "sup",
}


def untranslated(text: str, names: set[str]) -> bool:
    """Latin-only user text: no CJK character and a word that is neither a name nor notation."""
    plain = re.sub(r"<[^>]+>|&\w+;", " ", text)
    if not plain.strip() or CJK.search(plain):
        return False
    return any(w not in ALLOWED and w not in names for w in WORD.findall(plain))


def visible_strings(root: QWidget) -> list[tuple[str, str]]:
    """(where, text) for every user-facing string under root: titles, labels, buttons, tooltips,
    placeholders, menus and actions, combo entries that are not model names, plot titles and axes."""
    found = [("window title", root.windowTitle())]
    widgets = [root, *root.findChildren(QWidget)]
    for w in widgets:
        name = f"{type(w).__name__}#{w.objectName()}"
        found.append((name + " tooltip", w.toolTip()))
        if isinstance(w, (QLabel, QAbstractButton)):
            found.append((name, w.text()))
        elif isinstance(w, QGroupBox):
            found.append((name, w.title()))
        elif isinstance(w, QDockWidget):
            found.append((name, w.windowTitle()))
        elif isinstance(w, (QLineEdit, QPlainTextEdit, QTextEdit)):
            found.append((name + " placeholder", w.placeholderText()))
        elif isinstance(w, QSpinBox):
            found.append((name + " special", w.specialValueText()))
        elif isinstance(w, QComboBox):  # the UI's own entries; the others are model names
            found += [(name + f" item {i}", w.itemText(i)) for i in range(w.count()) if w.itemData(i) in UI_ENTRIES]
    for action in root.findChildren(QAction):
        found.append(("action", action.text()))
        found.append(("action tooltip", action.toolTip() if action.toolTip() != action.text().replace("&", "") else ""))
    for plot in root.findChildren(pg.PlotWidget):
        item = plot.getPlotItem()
        found.append(("plot title", item.titleLabel.text))
        for axis in ("left", "bottom"):
            found.append((f"plot {axis} axis", item.getAxis(axis).labelText))
    return [(where, text) for where, text in found if text]


@pytest.fixture
def chinese(qapp):
    language = i18n.install(qapp, "zh_CN")
    yield language
    i18n.install(qapp, "en")


@pytest.fixture
def zh_window(qtbot, data_dir, tiny_pair_dirs, chinese):
    from app.gui.main_window import MainWindow

    target, draft = tiny_pair_dirs
    win = MainWindow(target_spec=str(target), draft_spec=str(draft))
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: win.model.target is not None and win.model.drafter is not None, timeout=60_000)
    win.recorder = Recorder(win.worker)
    win.controls.temperature.setValue(1.0)
    win.controls.seed_on.setChecked(True)
    win.controls.seed.setValue(3)
    return win


def names_of(win) -> set[str]:
    """Model and drafter names shown as they are (they come from the files, not from the UI)."""
    combos = (win.controls.target, win.controls.draft)
    listed = [c.itemText(i) for c in combos for i in range(c.count()) if c.itemData(i) not in UI_ENTRIES]
    return set(WORD.findall(" ".join([win.model.target.name, draft_name(win.model.drafter), *listed])))


def test_the_main_window_step_through_and_lab_speak_chinese(qtbot, zh_window, chinese):
    assert chinese == "zh_CN"
    win = zh_window
    win.controls.max_new.setValue(40)
    send(qtbot, win, "你好")
    win.show_step_through()
    win.step.show_round(0)
    lab = win.show_lab()
    lab.chain.simulate(2000)
    names = names_of(win)
    left = [(where, text) for where, text in visible_strings(win) + visible_strings(lab)
            if untranslated(text, names)]
    assert left == [], "untranslated: " + "; ".join(f"{w}: {t!r}" for w, t in left)
    # The chat itself: the speaker, the footer and its actions, the legend.
    chat = win.chat.toPlainText()
    assert "你" in chat and "复制" in chat and "个词元" in chat
    assert "接受" in win.legend.toPlainText()


def test_the_check_catches_an_untranslated_string(qtbot, zh_window):
    """Planted: a widget with an English text added after the translation was built."""
    names = names_of(zh_window)
    QLabel("Forgotten label", zh_window.centralWidget())
    assert any(untranslated(t, names) for _, t in visible_strings(zh_window))


def test_every_translation_is_finished_and_its_characters_are_in_the_font(qapp):
    tree = ET.parse(resource_path("i18n", "speclens_zh_CN.ts"))
    unfinished = [m.find("source").text for m in tree.iter("message")
                  if m.find("translation").get("type") == "unfinished" or not m.find("translation").text]
    assert unfinished == []
    assert resource_path("i18n", "speclens_zh_CN.qm").stat().st_size > 1000
    font = QRawFont(str(resource_path(*i18n.CJK_FONT)), 12)
    assert font.isValid()
    text = "".join(t.text or "" for t in tree.iter("translation"))
    missing = sorted({ch for ch in text if ch.strip() and not font.supportsCharacter(ord(ch))})
    assert missing == [], f"re-run packaging/i18n.py font: {''.join(missing)}"


def test_the_drafter_choice_is_explained_in_chinese(chinese):
    """The policy (no Qt) gives its reasons as data; the window words them in the user's language."""
    from app.drafting.reasons import limit_text
    from app.engine.policy import Choice, Limit, Option
    from app.gui.choice_text import _reason, _why

    names = {"SmolLM"}
    for limit in (Limit("cost", 1.05, 2.1, "CPU"), Limit("coverage", 0.38, 2.1, "CPU"),
                  Limit("acceptance", 0.21, 2.1, "CPU"), Limit("tree", 0.55, 3.8, "CPU", 20)):
        assert not untranslated(_why(limit), names), _why(limit)
        assert untranslated(limit_text(limit), names)  # the English stays for the CLI and the logs
    option = Option("self", "SmolLM", 4, 0.93, Limit("cost", 0.93, 2.1, "CPU"))
    tree = Option("self", "SmolLM", 6, 1.3, Limit("cost", 0.2, 2.1, "CPU"), nodes=12)
    for choice in (Choice(None, 1, 1.0, "", (option,)), Choice("self", 4, 1.2, "", (option,)), Choice(None, 1, 1.0, ""),
                   Choice("self", 6, 1.3, "", (tree,), 12)):
        assert not untranslated(_reason(choice, "CPU"), names), _reason(choice, "CPU")
