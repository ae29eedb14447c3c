"""The menu bar and keyboard shortcuts: every action calls a method of the window."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QShortcut

from . import theme


class MenusMixin:
    def _build_menus(self) -> None:
        file = self.menuBar().addMenu("&File")
        file.addAction("New chat", QKeySequence.StandardKey.New, self.new_chat)
        file.addAction("Export conversation as HTML…", lambda: self._export_conversation("html"))
        file.addAction("Export conversation as Markdown…", lambda: self._export_conversation("md"))
        file.addAction("Export plots (PNG, SVG, CSV)…", self._export_plots)
        file.addSeparator()
        file.addAction("Quit", QKeySequence.StandardKey.Quit, self.close)
        chat = self.menuBar().addMenu("&Chat")
        chat.addAction("Send", QKeySequence("Ctrl+Return"), self.send)
        chat.addAction("Stop", QKeySequence(Qt.Key.Key_Escape), self.stop)
        chat.addAction("Regenerate last answer", QKeySequence("Ctrl+R"), self.regenerate)
        chat.addAction("Copy last answer", QKeySequence("Ctrl+Shift+C"), self.copy_last_answer)
        QShortcut(QKeySequence("Ctrl+Enter"), self, self.send)
        models = self.menuBar().addMenu(self.tr("&Models"))
        models.addAction(self.tr("Recommended pairs…"), self.show_recommended_pairs)
        view = self.menuBar().addMenu("&View")
        view.addAction("Larger text", QKeySequence.StandardKey.ZoomIn, lambda: self.zoom(1))
        QShortcut(QKeySequence("Ctrl+="), self, lambda: self.zoom(1))
        view.addAction("Smaller text", QKeySequence.StandardKey.ZoomOut, lambda: self.zoom(-1))
        view.addAction("Reset text size", QKeySequence("Ctrl+0"), lambda: self.zoom(0))
        view.addSeparator()
        themes = view.addMenu("Theme")
        group = QActionGroup(self)
        for name in theme.THEMES:
            action = QAction(name.capitalize(), self, checkable=True, checked=name == self.theme_name)
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            group.addAction(action)
            themes.addAction(action)
        view.addSeparator()
        view.addAction("Step through rounds", QKeySequence("F6"), self.show_step_through)
        view.addAction("Lab…", QKeySequence("F7"), self.show_lab)
        view.addSeparator()
        for dock in self.docks.values():
            view.addAction(dock.toggleViewAction())

    def show_step_through(self) -> None:
        """Raise the step-through dock and give it the keyboard, so → and ← step at once."""
        dock = self.docks["step"]
        dock.show()
        dock.raise_()
        self.step.setFocus()

    def show_lab(self):
        """The worked-example lab, one window per main window, created on first use."""
        from .lab import LabWindow

        if getattr(self, "lab", None) is None:
            self.lab = LabWindow(self.colors, self)
            self.lab.resize(1200, 760)
        self.lab.show()
        self.lab.raise_()
        return self.lab

