"""The menu bar and keyboard shortcuts: every action calls a method of the window."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QShortcut

from . import i18n, theme
from .serve_flow import toggle_serving


class MenusMixin:
    def _build_menus(self) -> None:
        file = self.menuBar().addMenu(self.tr("&File"))
        file.addAction(self.tr("New chat"), QKeySequence.StandardKey.New, self.history.new_chat)
        file.addAction(self.tr("Export conversation as HTML…"), lambda: self.history._export_conversation("html"))
        file.addAction(self.tr("Export conversation as Markdown…"), lambda: self.history._export_conversation("md"))
        file.addAction(self.tr("Export plots (PNG, SVG, CSV)…"), self.history._export_plots)
        file.addSeparator()
        file.addAction(self.tr("Open recording…"), QKeySequence.StandardKey.Open, lambda: self.recordings.open())
        file.addAction(self.tr("Save recording…"), QKeySequence.StandardKey.Save, lambda: self.recordings.save())
        file.addSeparator()
        file.addAction(self.tr("Quit"), QKeySequence.StandardKey.Quit, self.close)
        chat = self.menuBar().addMenu(self.tr("&Chat"))
        chat.addAction(self.tr("Send"), QKeySequence("Ctrl+Return"), self.chat_flow.send)
        chat.addAction(self.tr("Stop"), QKeySequence(Qt.Key.Key_Escape), lambda: self.presentation.escape())
        chat.addAction(self.tr("Regenerate last answer"), QKeySequence("Ctrl+R"), self.chat_flow.regenerate)
        chat.addAction(self.tr("Copy last answer"), QKeySequence("Ctrl+Shift+C"), self.chat_flow.copy_last_answer)
        chat.addSeparator()
        chat.addAction(self.tr("Race: speculative against target only"), QKeySequence("Ctrl+Shift+R"),
                       lambda: self.race.from_input("target"))
        chat.addAction(self.tr("Race: current draft against prompt lookup"), lambda: self.race.from_input("lookup"))
        QShortcut(QKeySequence("Ctrl+Enter"), self, self.chat_flow.send)
        models = self.menuBar().addMenu(self.tr("&Models"))
        models.addAction(self.tr("Recommended pairs…"), self.model_flow.show_recommended_pairs)
        models.addAction(self.tr("Train a draft…"), lambda: self.training_flow.show_dialog())
        models.addAction(self.offer.action)
        serve = models.addAction(self.tr("Serve on localhost"))  # OpenAI-compatible; app/gui/serve_flow.py
        serve.setCheckable(True)
        serve.triggered.connect(lambda _=False: toggle_serving(self, serve))
        dtypes = models.addMenu(self.tr("Target dtype"))
        group = QActionGroup(self)
        current = str(self.settings.value("dtype", "auto"))
        for code, name in (("auto", self.tr("Automatic (fastest exact kernels)")), ("bfloat16", "bfloat16"),
                           ("float32", "float32")):
            action = QAction(name, self, checkable=True, checked=code == current)
            action.triggered.connect(lambda _=False, c=code: self.model_flow.set_target_dtype(c))
            group.addAction(action)
            dtypes.addAction(action)
        trees = models.addMenu(self.tr("Token trees"))  # app.engine.policy.TREE_MODES, held by the chat model
        group = QActionGroup(self)
        for code, name in (("auto", self.tr("Automatic (a tree where it is measured faster)")),
                           ("on", self.tr("On (always a tree)")), ("off", self.tr("Off (chains only)"))):
            action = QAction(name, self, checkable=True, checked=code == self.model.tree_mode)
            action.setData(code)
            action.triggered.connect(lambda _=False, c=code: self.model_flow.set_tree_mode(c))
            group.addAction(action)
            trees.addAction(action)
        self.tree_actions = group
        view = self.menuBar().addMenu(self.tr("&View"))
        view.addAction(self.tr("Larger text"), QKeySequence.StandardKey.ZoomIn, lambda: self.zoom(1))
        QShortcut(QKeySequence("Ctrl+="), self, lambda: self.zoom(1))
        view.addAction(self.tr("Smaller text"), QKeySequence.StandardKey.ZoomOut, lambda: self.zoom(-1))
        view.addAction(self.tr("Reset text size"), QKeySequence("Ctrl+0"), lambda: self.zoom(0))
        view.addAction(self.tr("Presentation"), QKeySequence(Qt.Key.Key_F5), lambda: self.presentation.toggle())
        view.addSeparator()
        themes = view.addMenu(self.tr("Theme"))
        group = QActionGroup(self)
        for name in theme.THEMES:
            label = {"system": self.tr("System"), "light": self.tr("Light"), "dark": self.tr("Dark")}.get(name, name)
            action = QAction(label, self, checkable=True, checked=name == self.theme_name)
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            group.addAction(action)
            themes.addAction(action)
        view.addSeparator()
        view.addAction(self.tr("Step through rounds"), QKeySequence("F6"), self.show_step_through)
        view.addAction(self.tr("Lab…"), QKeySequence("F7"), self.show_lab)
        languages = view.addMenu(self.tr("Language"))
        group = QActionGroup(self)
        current = i18n.stored_choice()
        for code, name in (("system", self.tr("System")), ("en", "English"), ("zh_CN", "简体中文")):
            action = QAction(name, self, checkable=True, checked=code == current)
            action.triggered.connect(lambda _=False, c=code: self.set_language(c))
            group.addAction(action)
            languages.addAction(action)
        view.addSeparator()
        for dock in self.docks.values():
            view.addAction(dock.toggleViewAction())
        # Presentation mode hides the menu bar; the window keeps the shortcuts (F5, Esc, Ctrl+N …).
        for menu in (file, chat, view):
            self.addActions([a for a in menu.actions() if not a.isSeparator() and a.menu() is None])

    def show_step_through(self) -> None:
        """Raise the step-through dock and give it the keyboard, so → and ← step at once."""
        dock = self.docks["step"]
        dock.show()
        dock.raise_()
        self.step.redraw_if_stale()
        self.step.setFocus()


    def set_language(self, choice: str) -> None:
        """Stored for the next start: every widget reads its texts when it is built."""
        i18n.store_choice(choice)
        self.show_banner(self.tr("The language changes when SpecLens next starts."), info=True)
