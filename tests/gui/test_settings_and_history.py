"""Settings persist through QSettings (a window, closed and opened again); the conversation list searches,
renames and deletes (the history flow with its collaborators)."""

from __future__ import annotations

from app.history import HistoryStore


def new_window(qtbot):
    from app.gui.main_window import MainWindow

    window = MainWindow(autoload=False)
    qtbot.addWidget(window)
    return window


def test_controls_theme_and_text_size_persist(qtbot, data_dir):
    first = new_window(qtbot)
    first.controls.gamma.setValue(7)
    first.controls.temperature.setValue(0.0)
    first.set_theme("dark")
    first.zoom(3)
    size = first.chat.font().pointSize()
    first.close()
    assert (data_dir / "settings.ini").is_file()
    second = new_window(qtbot)
    assert second.controls.params().gamma == 7 and second.controls.params().greedy
    assert second.theme_name == "dark" and second.colors.dark
    assert second.chat.font().pointSize() == size


def test_conversation_list_search_rename_delete(qtbot, parts, monkeypatch):
    store = HistoryStore()
    keep = store.create_conversation("Lighthouse story")
    gone = store.create_conversation("Tax questions")
    store.add_message(gone, "user", "hello")
    store.close()
    rig = parts
    rig.add_history()
    panel = rig.conversations
    panel.refresh()
    assert panel.list.count() == 2
    panel.search.setText("light")
    assert [panel.list.item(i).text() for i in range(panel.list.count())] == ["Lighthouse story"]
    panel.search.clear()
    rig.history.open_conversation(gone)
    assert [m.content for m in rig.conversation.messages] == ["hello"]
    monkeypatch.setattr("app.gui.conversations.QInputDialog.getText", lambda *a, **k: ("Beacon", True))
    panel.rename(keep)
    assert rig.store.conversation(keep).title == "Beacon"
    monkeypatch.setattr("app.gui.conversations.QMessageBox.question",
                        lambda *a, **k: panel_yes())
    panel.delete(gone)
    assert [c.id for c in rig.store.list_conversations()] == [keep]
    assert rig.conversation.conv_id is None and rig.conversation.messages == []


def panel_yes():
    from PySide6.QtWidgets import QMessageBox

    return QMessageBox.StandardButton.Yes
