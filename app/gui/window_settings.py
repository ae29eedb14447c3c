"""What the window remembers between runs (QSettings, an INI file in the user data folder):
geometry and dock layout, decoding controls, the rejected-token toggle and the text size. The
theme and the last models are saved where they change."""

from __future__ import annotations

BASE_FONT_PT = 12  # readable from the back of a room; Ctrl+plus/minus scales it
DEFAULT_SIZE = (1440, 900)  # or the screen's available size, where that is smaller (1366×768 laptops)
# The statistics dock takes what the chat column leaves (its prompt, some lines of chat, the legend and the
# input need CHAT_PX), up to half the window: two tabs of plots at 768 px high, a 2×2 grid at 1080.
CHAT_PX, PLOTS_MIN_PX = 420, 300


def default_docks(window) -> None:
    """The first-run dock sizes for the window's current size."""
    from PySide6.QtCore import Qt

    height = min(window.height() // 2, max(PLOTS_MIN_PX, window.height() - CHAT_PX))
    window.resizeDocks([window.docks["plots"]], [height], Qt.Orientation.Vertical)


def restore(window) -> None:
    s = window.settings
    geometry, state = s.value("geometry"), s.value("window_state")
    if geometry is not None:
        window.restoreGeometry(geometry)
    else:
        screen = window.screen().availableGeometry()
        window.resize(min(DEFAULT_SIZE[0], screen.width()), min(DEFAULT_SIZE[1], screen.height()))
    if state is not None:
        window.restoreState(state)
    else:
        default_docks(window)
    c = window.controls
    for key, widget, kind in (("gamma", c.gamma, int), ("temperature", c.temperature, float),
                              ("top_k", c.top_k, int), ("top_p", c.top_p, float),
                              ("max_new_tokens", c.max_new, int)):
        value = s.value(key)
        if value is not None:
            widget.setValue(kind(value))
    c.show_rejected.setChecked(s.value("show_rejected", "false") in (True, "true"))
    window.set_font_size(int(s.value("font_size", BASE_FONT_PT)))


def save(window) -> None:
    s, c = window.settings, window.controls
    s.setValue("geometry", window.saveGeometry())
    s.setValue("window_state", window.saveState())
    s.setValue("gamma", c.gamma.value())
    s.setValue("temperature", c.temperature.value())
    s.setValue("top_k", c.top_k.value())
    s.setValue("top_p", c.top_p.value())
    s.setValue("max_new_tokens", c.max_new.value())
    s.setValue("show_rejected", c.show_rejected.isChecked())
    s.sync()
