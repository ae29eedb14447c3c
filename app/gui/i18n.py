"""The UI language: English in the source, Simplified Chinese from resources/i18n/speclens_zh_CN.qm.

The language follows the OS locale unless View → Language (stored in the settings) or SPECLENS_LANG
chooses one; it applies at the next start, since widgets read their texts when they are built.
CJK glyphs come from a subset of Noto Sans SC shipped in resources/fonts (most machines, and the
offscreen platform, have no CJK font), registered before any widget exists.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import QCoreApplication, QLocale, QTranslator
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QApplication

from app.paths import resource_path

from .settings import Settings

LANGUAGES = ("system", "en", "zh_CN")  # stored values; "system" follows the OS locale
TRANSLATED = ("zh_CN",)
CJK_FONT = ("fonts", "NotoSansSC-SpecLens.otf")
# What install() set up on the one QApplication: its translator, the CJK subset's families, the font before them
_installed: dict[str, Any] = {}


def stored_choice() -> str:
    """The language chosen in View → Language ("system" when never chosen)."""
    value = Settings().language
    return value if value in LANGUAGES else "system"


def store_choice(choice: str) -> None:
    Settings().language = choice


def resolve(choice: str | None = None) -> str:
    """"en" or a translated language code, from an explicit choice, SPECLENS_LANG, the settings or the OS."""
    choice = choice or os.environ.get("SPECLENS_LANG") or stored_choice()
    if choice == "system":
        name = QLocale.system().name()  # e.g. zh_CN, zh_SG, en_US
        return "zh_CN" if name.startswith("zh") and not name.startswith(("zh_TW", "zh_HK", "zh_MO")) else "en"
    return choice if choice in TRANSLATED else "en"


def install(app: QApplication, choice: str | None = None) -> str:
    """Load the translation for the resolved language into app (once); returns the language used."""
    language = resolve(choice)
    old = _installed.pop("translator", None)
    if old is not None:
        app.removeTranslator(old)
    register_fonts(app, language)
    if language == "en":
        return language
    translator = QTranslator(app)
    if not translator.load(str(resource_path("i18n", f"speclens_{language}.qm"))):
        return "en"  # a missing translation leaves the English UI, never a broken one
    app.installTranslator(translator)
    _installed["translator"] = translator
    return language


def register_fonts(app: QApplication, language: str) -> None:
    """Register the CJK subset and, for Chinese, put it first in the application font's families."""
    families = _installed.get("cjk_families")
    if families is None:
        path = resource_path(*CJK_FONT)
        font_id = QFontDatabase.addApplicationFont(str(path)) if path.is_file() else -1
        families = _installed["cjk_families"] = QFontDatabase.applicationFontFamilies(font_id) if font_id >= 0 else []
    base_font = _installed.setdefault("base_font", app.font())
    if not families or language == "en":
        app.setFont(base_font)  # Qt's fallback still finds the subset for 简体中文 in a menu
        return
    font = app.font()
    base = [f for f in font.families() if f not in families] or [font.family()]
    font.setFamilies(families + base)  # the subset has Latin too, so mixed text keeps one look
    app.setFont(font)


def _pyqtgraph_strings() -> None:
    """Never called: lupdate reads these so pyqtgraph's own UI strings (it translates them under these
    contexts) are in our .ts. The plot's right-click scene menu is the one users meet."""
    QCoreApplication.translate("GraphicsScene", "Export...")
