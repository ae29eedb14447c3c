"""The menu bar and keyboard shortcuts, built for the window, the composition root: every action calls a
public method of the window or of one of its flows, or changes the chat model."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QShortcut

from . import i18n, theme


def build_menus(w) -> None:
    file = w.menuBar().addMenu(QCoreApplication.translate("Menus", "&File"))
    file.addAction(QCoreApplication.translate("Menus", "New chat"), QKeySequence.StandardKey.New, w.history.new_chat)
    file.addAction(QCoreApplication.translate("Menus", "Export conversation as HTML…"), lambda: w.history.export_conversation("html"))
    file.addAction(QCoreApplication.translate("Menus", "Export conversation as Markdown…"), lambda: w.history.export_conversation("md"))
    file.addAction(QCoreApplication.translate("Menus", "Export plots (PNG, SVG, CSV)…"), w.history.export_plots)
    file.addSeparator()
    file.addAction(QCoreApplication.translate("Menus", "Open recording…"), QKeySequence.StandardKey.Open, w.recordings.open)
    file.addAction(QCoreApplication.translate("Menus", "Save recording…"), QKeySequence.StandardKey.Save, w.recordings.save)
    file.addSeparator()
    file.addAction(QCoreApplication.translate("Menus", "Quit"), QKeySequence.StandardKey.Quit, w.close)
    chat = w.menuBar().addMenu(QCoreApplication.translate("Menus", "&Chat"))
    chat.addAction(QCoreApplication.translate("Menus", "Send"), QKeySequence("Ctrl+Return"), w.chat_flow.send)
    chat.addAction(QCoreApplication.translate("Menus", "Stop"), QKeySequence(Qt.Key.Key_Escape), w.escape)
    chat.addAction(QCoreApplication.translate("Menus", "Regenerate last answer"), QKeySequence("Ctrl+R"), w.chat_flow.regenerate)
    chat.addAction(QCoreApplication.translate("Menus", "Copy last answer"), QKeySequence("Ctrl+Shift+C"), w.chat_flow.copy_last_answer)
    chat.addSeparator()
    chat.addAction(QCoreApplication.translate("Menus", "Race: speculative against target only"), QKeySequence("Ctrl+Shift+R"),
                   lambda: w.race.from_input("target"))
    chat.addAction(QCoreApplication.translate("Menus", "Race: current draft against prompt lookup"), lambda: w.race.from_input("lookup"))
    chat.addAction(QCoreApplication.translate("Menus", "Race: current draft as a chain against it as a token tree"),
                   lambda: w.race.from_input("tree"))
    QShortcut(QKeySequence("Ctrl+Enter"), w, w.chat_flow.send)
    models = w.menuBar().addMenu(QCoreApplication.translate("Menus", "&Models"))
    models.addAction(QCoreApplication.translate("Menus", "Recommended pairs…"), w.model_flow.show_recommended_pairs)
    models.addAction(QCoreApplication.translate("Menus", "Train a draft…"), w.training_flow.show_dialog)
    models.addAction(QCoreApplication.translate("Menus", "Measure this machine again"), w.model_flow.measure_again)
    models.addAction(w.offer.action)
    models.addAction(w.serve.action)  # Serve on localhost: OpenAI-compatible (app/gui/serve_flow.py)
    dtypes = models.addMenu(QCoreApplication.translate("Menus", "Target dtype"))
    group = QActionGroup(w)
    current = w.settings.dtype
    for code, name in (("auto", QCoreApplication.translate("Menus", "Automatic (fastest exact kernels)")), ("bfloat16", "bfloat16"),
                       ("float32", "float32")):
        action = QAction(name, w, checkable=True, checked=code == current)
        action.triggered.connect(lambda _=False, c=code: w.model_flow.set_target_dtype(c))
        group.addAction(action)
        dtypes.addAction(action)
    trees = models.addMenu(QCoreApplication.translate("Menus", "Token trees"))  # app.engine.policy.TREE_MODES, held by the chat model
    group = QActionGroup(w)  # follows the chat model's mode; changing it reloads the pair (ModelFlow)
    for code, name in (("auto", QCoreApplication.translate("Menus", "Automatic (a tree where it is measured faster)")),
                       ("on", QCoreApplication.translate("Menus", "On (always a tree)")), ("off", QCoreApplication.translate("Menus", "Off (chains only)"))):
        action = QAction(name, w, checkable=True, checked=code == w.model.tree_mode)
        action.setData(code)
        action.triggered.connect(lambda _=False, c=code: w.model.set_tree_mode(c))
        group.addAction(action)
        trees.addAction(action)
    w.tree_actions = group
    w.model.tree_mode_changed.connect(lambda mode, trees=group: _check(trees, mode))
    view = w.menuBar().addMenu(QCoreApplication.translate("Menus", "&View"))
    view.addAction(QCoreApplication.translate("Menus", "Larger text"), QKeySequence.StandardKey.ZoomIn, lambda: w.zoom(1))
    QShortcut(QKeySequence("Ctrl+="), w, lambda: w.zoom(1))
    view.addAction(QCoreApplication.translate("Menus", "Smaller text"), QKeySequence.StandardKey.ZoomOut, lambda: w.zoom(-1))
    view.addAction(QCoreApplication.translate("Menus", "Reset text size"), QKeySequence("Ctrl+0"), lambda: w.zoom(0))
    view.addAction(QCoreApplication.translate("Menus", "Presentation"), QKeySequence(Qt.Key.Key_F5), lambda: w.presentation.toggle())
    view.addSeparator()
    themes = view.addMenu(QCoreApplication.translate("Menus", "Theme"))
    group = QActionGroup(w)
    for name in theme.THEMES:
        label = {"system": QCoreApplication.translate("Menus", "System"), "light": QCoreApplication.translate("Menus", "Light"), "dark": QCoreApplication.translate("Menus", "Dark")}.get(name, name)
        action = QAction(label, w, checkable=True, checked=name == w.theme_name)
        action.triggered.connect(lambda _=False, n=name: w.set_theme(n))
        group.addAction(action)
        themes.addAction(action)
    view.addSeparator()
    view.addAction(QCoreApplication.translate("Menus", "Step through rounds"), QKeySequence("F6"), w.show_step_through)
    view.addAction(QCoreApplication.translate("Menus", "Lab…"), QKeySequence("F7"), w.show_lab)
    languages = view.addMenu(QCoreApplication.translate("Menus", "Language"))
    group = QActionGroup(w)
    current = i18n.stored_choice()
    for code, name in (("system", QCoreApplication.translate("Menus", "System")), ("en", "English"), ("zh_CN", "简体中文")):
        action = QAction(name, w, checkable=True, checked=code == current)
        action.triggered.connect(lambda _=False, c=code: w.set_language(c))
        group.addAction(action)
        languages.addAction(action)
    view.addSeparator()
    for dock in w.docks.values():
        view.addAction(dock.toggleViewAction())
    # Presentation mode hides the menu bar; the window keeps the shortcuts (F5, Esc, Ctrl+N …).
    for menu in (file, chat, view):
        w.addActions([a for a in menu.actions() if not a.isSeparator() and a.menu() is None])


def _check(group: QActionGroup, code: str) -> None:
    for action in group.actions():
        action.setChecked(action.data() == code)
