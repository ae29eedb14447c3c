"""The UI language: English in the source, Simplified Chinese from resources/i18n/speclens_zh_CN.qm.

The language follows the OS locale unless View → Language (stored in the settings) or SPECLENS_LANG
chooses one; it applies at the next start, since widgets read their texts when they are built.
CJK glyphs come from a subset of Noto Sans SC shipped in resources/fonts (most machines, and the
offscreen platform, have no CJK font), registered before any widget exists.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QCoreApplication, QLocale, QSettings, QTranslator
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QApplication

from app.paths import resource_path, user_data_dir

LANGUAGES = ("system", "en", "zh_CN")  # stored values; "system" follows the OS locale
TRANSLATED = ("zh_CN",)
CJK_FONT = ("fonts", "NotoSansSC-SpecLens.otf")
SETTING = "language"


def stored_choice() -> str:
    """The language chosen in View → Language ("system" when never chosen)."""
    value = str(QSettings(str(user_data_dir() / "settings.ini"), QSettings.Format.IniFormat).value(SETTING, "system"))
    return value if value in LANGUAGES else "system"


def store_choice(choice: str) -> None:
    QSettings(str(user_data_dir() / "settings.ini"), QSettings.Format.IniFormat).setValue(SETTING, choice)


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
    old = getattr(app, "_speclens_translator", None)
    if old is not None:
        app.removeTranslator(old)
        app._speclens_translator = None
    register_fonts(app, language)
    if language == "en":
        return language
    translator = QTranslator(app)
    if not translator.load(str(resource_path("i18n", f"speclens_{language}.qm"))):
        return "en"  # a missing translation leaves the English UI, never a broken one
    app.installTranslator(translator)
    app._speclens_translator = translator
    return language


def register_fonts(app: QApplication, language: str) -> None:
    """Register the CJK subset and, for Chinese, put it first in the application font's families."""
    families = getattr(app, "_speclens_cjk_families", None)
    if families is None:
        path = resource_path(*CJK_FONT)
        font_id = QFontDatabase.addApplicationFont(str(path)) if path.is_file() else -1
        families = QFontDatabase.applicationFontFamilies(font_id) if font_id >= 0 else []
        app._speclens_cjk_families = families
    if not hasattr(app, "_speclens_base_font"):
        app._speclens_base_font = app.font()
    if not families or language == "en":
        app.setFont(app._speclens_base_font)  # Qt's fallback still finds the subset for 简体中文 in a menu
        return
    font = app.font()
    base = [f for f in font.families() if f not in families] or [font.family()]
    font.setFamilies(families + base)  # the subset has Latin too, so mixed text keeps one look
    app.setFont(font)


def _pyqtgraph_strings() -> None:
    """Never called: lupdate reads these so pyqtgraph's own UI strings (it translates them under these
    contexts) are in our .ts. The plot's right-click scene menu is the one users meet."""
    QCoreApplication.translate("GraphicsScene", "Export...")
