"""What the window remembers between runs, typed: one `Settings` over QSettings (an INI file in the user
data folder), each key named once below with its type and its default. The parts that read or change a
setting (the window, the model flow, the menus, window_settings, i18n) go through these fields, never
through key strings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from PySide6.QtCore import QByteArray, QSettings

from app.drafting.registry import AUTO
from app.models.embedded import DEFAULT_SPEC
from app.paths import user_data_dir
from app.session.chat_params import CHAT_PARAMS

T = TypeVar("T")
BASE_FONT_PT = 12  # readable from the back of a room; Ctrl+plus/minus scales it
AUTO_GAMMA = 0  # the γ control's special value: re-chosen every round from live measurements


def settings_file() -> Path:
    return user_data_dir() / "settings.ini"


def _flag(value: Any) -> bool:
    return value in (True, "true")  # an INI file gives "true" back for True


def _bytes(value: Any) -> QByteArray | None:
    return value if isinstance(value, QByteArray) else None


class Key(Generic[T]):
    """One setting: its key in the file, how a stored value is read back, and the default when none is."""

    def __init__(self, key: str, read: Callable[[Any], T], default: T) -> None:
        self.key, self.read, self.default = key, read, default

    @overload
    def __get__(self, settings: None, owner: type) -> Key[T]: ...

    @overload
    def __get__(self, settings: Settings, owner: type) -> T: ...

    def __get__(self, settings: Settings | None, owner: type) -> T | Key[T]:
        if settings is None:
            return self
        value = settings.store.value(self.key)
        if value is None:
            return self.default
        try:
            return self.read(value)
        except (TypeError, ValueError):  # a hand-edited or damaged value: the default, not a crash
            return self.default

    def __set__(self, settings: Settings, value: T) -> None:
        settings.store.setValue(self.key, value)


class Settings:
    """The settings file, with one typed field per key."""

    theme = Key("theme", str, "system")  # app.gui.theme.THEMES
    language = Key("language", str, "system")  # app.gui.i18n.LANGUAGES; applies at the next start
    target = Key("target", str, DEFAULT_SPEC)  # the last pair loaded
    draft = Key("draft", str, AUTO)
    tree = Key("tree", str, AUTO)  # Models ▸ Token trees (app.engine.policy.TREE_MODES)
    dtype = Key("dtype", str, "auto")  # Models ▸ Target dtype
    font_size = Key("font_size", int, BASE_FONT_PT)
    geometry = Key("geometry", _bytes, None)
    window_state = Key("window_state", _bytes, None)  # the docks' layout, saved with its LAYOUT_VERSION
    # the decoding controls
    gamma = Key("gamma", int, AUTO_GAMMA)
    temperature = Key("temperature", float, CHAT_PARAMS.temperature)
    top_k = Key("top_k", int, CHAT_PARAMS.top_k)
    top_p = Key("top_p", float, CHAT_PARAMS.top_p)
    max_new_tokens = Key("max_new_tokens", int, CHAT_PARAMS.max_new_tokens)
    show_rejected = Key("show_rejected", _flag, False)

    def __init__(self, path: Path | None = None) -> None:
        self.store = QSettings(str(path or settings_file()), QSettings.Format.IniFormat)

    def sync(self) -> None:
        self.store.sync()
