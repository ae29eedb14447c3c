"""Light and dark themes: a Fusion palette plus one shared stylesheet, following the OS by default."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from app.paths import resource_path

THEMES = ("system", "light", "dark")


@dataclass(frozen=True, slots=True)
class Colors:
    dark: bool
    window: str
    base: str
    alt_base: str
    text: str
    muted: str
    accent: str
    user_bubble: str
    border: str
    on_accent: str  # text drawn on the accent colour


LIGHT = Colors(False, "#f4f5f7", "#ffffff", "#eef0f3", "#1d1f23", "#6b7280", "#0072B2", "#e8f1f8", "#d5d9e0", "#ffffff")
DARK = Colors(True, "#1e2126", "#16181c", "#23262c", "#e6e8eb", "#9aa1ac", "#56B4E9", "#23303c", "#343841", "#101215")


def high_contrast(colors: Colors) -> Colors:
    """Presentation mode: pure black on white or white on black, muted text darker or lighter, for
    projectors that wash colours out."""
    if colors.dark:
        return replace(colors, window="#000000", base="#000000", alt_base="#111111", text="#ffffff",
                       muted="#c8ccd2", border="#5a5f68", user_bubble="#14222e")
    return replace(colors, window="#ffffff", base="#ffffff", alt_base="#f0f0f0", text="#000000",
                   muted="#3d424a", border="#9aa1ac", user_bubble="#e3eef7")


def resolve(theme: str, contrast: bool = False) -> Colors:
    """'system' follows QStyleHints.colorScheme (light when the OS does not say)."""
    if contrast:
        return high_contrast(resolve(theme))
    if theme == "dark":
        return DARK
    if theme == "light":
        return LIGHT
    scheme = QGuiApplication.styleHints().colorScheme()
    return DARK if scheme == Qt.ColorScheme.Dark else LIGHT


def apply(app: QApplication, theme: str, contrast: bool = False) -> Colors:
    colors = resolve(theme, contrast)
    app.setStyle("Fusion")
    pal = QPalette()
    role = QPalette.ColorRole
    for r, value in (
        (role.Window, colors.window), (role.Base, colors.base), (role.AlternateBase, colors.alt_base),
        (role.Text, colors.text), (role.WindowText, colors.text), (role.ButtonText, colors.text),
        (role.Button, colors.alt_base), (role.ToolTipBase, colors.base), (role.ToolTipText, colors.text),
        (role.Highlight, colors.accent), (role.HighlightedText, colors.on_accent), (role.PlaceholderText, colors.muted),
        (role.Link, colors.accent),
    ):
        pal.setColor(r, QColor(value))
    pal.setColor(QPalette.ColorGroup.Disabled, role.Text, QColor(colors.muted))
    pal.setColor(QPalette.ColorGroup.Disabled, role.ButtonText, QColor(colors.muted))
    app.setPalette(pal)
    qss = resource_path("styles", "app.qss").read_text(encoding="utf-8")
    for key in ("window", "base", "alt_base", "text", "muted", "accent", "user_bubble", "border", "on_accent"):
        qss = qss.replace(f"@{key}", getattr(colors, key))
    app.setStyleSheet(qss)
    pg.setConfigOptions(antialias=True, background=colors.base, foreground=colors.text)
    return colors
