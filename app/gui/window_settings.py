"""The window's layout and what it restores between runs (app.gui.settings): geometry and dock layout,
decoding controls, the rejected-token toggle and the text size. The theme and the last models are saved
where they change."""

from __future__ import annotations

DEFAULT_SIZE = (1440, 900)  # or the screen's available size, where that is smaller (1366×768 laptops)
# The conversation leads: the chat column has the window's full height, the conversations list its left and
# the side column (statistics, tabbed with the controls) its right, SIDE_SHARE of the width within SIDE_PX.
CONVERSATIONS_PX, SIDE_SHARE, SIDE_PX = 220, 0.33, (420, 600)
STEP_PX = 340  # the step-through's height below the chat when shown: its cards whole, without scroll bars
# Bumped when the default layout changes, so a layout saved by an older SpecLens is not restored over it
# (1: the statistics below the chat; 2: the statistics in a side column).
LAYOUT_VERSION = 2


def default_docks(window) -> None:
    """The first-run dock sizes for the window's current size."""
    from PySide6.QtCore import Qt

    side = max(SIDE_PX[0], min(SIDE_PX[1], int(window.width() * SIDE_SHARE)))
    window.resizeDocks([window.docks["conversations"], window.docks["plots"]], [CONVERSATIONS_PX, side],
                       Qt.Orientation.Horizontal)


def restore(window) -> None:
    s = window.settings
    geometry, state = s.geometry, s.window_state
    if geometry is not None:
        window.restoreGeometry(geometry)
    else:
        screen = window.screen().availableGeometry()
        window.resize(min(DEFAULT_SIZE[0], screen.width()), min(DEFAULT_SIZE[1], screen.height()))
    if state is None or not window.restoreState(state, LAYOUT_VERSION):  # none saved, or an older layout's
        default_docks(window)
    c = window.controls
    c.gamma.setValue(s.gamma)
    c.temperature.setValue(s.temperature)
    c.top_k.setValue(s.top_k)
    c.top_p.setValue(s.top_p)
    c.max_new.setValue(s.max_new_tokens)
    c.show_rejected.setChecked(s.show_rejected)
    window.set_font_size(s.font_size)


def save(window) -> None:
    s, c = window.settings, window.controls
    s.geometry = window.saveGeometry()
    s.window_state = window.saveState(LAYOUT_VERSION)
    s.gamma = c.gamma.value()
    s.temperature = c.temperature.value()
    s.top_k = c.top_k.value()
    s.top_p = c.top_p.value()
    s.max_new_tokens = c.max_new.value()
    s.show_rejected = c.show_rejected.isChecked()
    s.sync()
