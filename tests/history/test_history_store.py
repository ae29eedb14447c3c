"""HistoryStore in one process: conversations, messages, ordering, validation, transactions."""

import sqlite3

import pytest

from app.engine.events import TopEntries
from app.history import HistoryStore, NotFound, StoredToken


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.sqlite3") as s:
        yield s


def all_statuses() -> list[StoredToken]:
    top = TopEntries(p=((7, 0.5), (3, 0.25)), q=((9, 0.75),), residual=((7, 0.625),))
    return [
        StoredToken(5, "Grüße", "accepted", 0, 0.91, 0.88, 1.0),
        StoredToken(6, " <script>", "rejected", 0, 0.05, 0.6, 0.0833),
        StoredToken(7, " 你好 🙂", "corrected", 0, 0.5, None, None, top),
        StoredToken(8, "\n", "bonus", 1, 0.7, None, None),
        StoredToken(9, "x", "target", 2, 1.0, None, None),
    ]


def test_conversations_create_list_rename_delete(store):
    a = store.create_conversation("Physics", "Answer briefly.")
    b = store.create_conversation()
    assert [c.id for c in store.list_conversations()] == [b, a]  # newest first
    info = store.conversation(a)
    assert (info.title, info.system_prompt, info.message_count) == ("Physics", "Answer briefly.", 0)
    assert store.conversation(b).title == "New chat"

    store.rename(b, "  Über   Chemie ")
    assert store.conversation(b).title == "Über Chemie"
    store.set_system_prompt(a, "Be exact.")
    assert store.conversation(a).system_prompt == "Be exact."

    store.delete(a)
    assert [c.id for c in store.list_conversations()] == [b]
    with pytest.raises(NotFound):
        store.conversation(a)


def test_search_is_case_insensitive_and_unicode_aware(store):
    ids = {
        title: store.create_conversation(title)
        for title in ("Über Chemie", "über alles", "Physics", "50%_off")
    }
    assert {c.id for c in store.list_conversations("ÜBER")} == {ids["Über Chemie"], ids["über alles"]}
    assert [c.id for c in store.list_conversations("%_")] == [ids["50%_off"]]  # no LIKE wildcards
    assert store.list_conversations("nothing") == []
    assert len(store.list_conversations("")) == 4


def test_new_message_moves_conversation_to_top_but_rename_does_not(store):
    a = store.create_conversation("a")
    b = store.create_conversation("b")
    store.add_message(a, "user", "hi")
    assert [c.id for c in store.list_conversations()] == [a, b]
    store.rename(b, "b2")
    assert [c.id for c in store.list_conversations()] == [a, b]


def test_messages_round_trip_tokens_stats_and_partial(store):
    conv = store.create_conversation()
    tokens = all_statuses()
    stats = {
        "new_tokens": 4,
        "seconds": 1.5,
        "alpha": 0.71,
        "gamma": 4,
        "histogram": [1, 0, 2, 0, 1],
        "rounds": [[4, 2, 3, False], [4, 4, 5, True]],
        "target": "SmolLM2",
        "draft": "self",
        "nested": {"a": [1, "ü"]},
    }
    u = store.add_message(conv, "user", "Grüße <b>&</b>")
    a = store.add_message(conv, "assistant", "Grüße 你好 🙂\nx", tokens, stats, partial=True)
    m_user, m_asst = store.messages(conv)
    assert (m_user.id, m_user.role, m_user.content, m_user.tokens, m_user.stats, m_user.partial) == (
        u,
        "user",
        "Grüße <b>&</b>",
        (),
        {},
        False,
    )
    assert (m_asst.id, m_asst.conversation_id, m_asst.role, m_asst.partial) == (a, conv, "assistant", True)
    assert m_asst.tokens == tuple(tokens)
    assert m_asst.stats == stats
    assert m_asst.created >= m_user.created
    assert store.conversation(conv).message_count == 2


def test_non_finite_stats_are_stored_as_null_not_refused(store):
    conv = store.create_conversation()
    store.add_message(conv, "assistant", "ok", stats={"alpha": float("nan"), "seconds": float("inf")})
    assert store.messages(conv)[0].stats == {"alpha": None, "seconds": None}


def test_delete_from_removes_the_message_and_everything_after(store):
    conv = store.create_conversation()
    other = store.create_conversation()
    ids = [
        store.add_message(conv, role, str(i))
        for i, role in enumerate(["user", "assistant", "user", "assistant"])
    ]
    kept = store.add_message(other, "user", "elsewhere")
    store.delete_from(conv, ids[2])
    assert [m.id for m in store.messages(conv)] == ids[:2]
    assert [m.id for m in store.messages(other)] == [kept]
    with pytest.raises(NotFound):
        store.delete_from(conv, kept)  # a message of another conversation is never touched
    assert [m.id for m in store.messages(other)] == [kept]


def test_ids_are_never_reused(store):
    conv = store.create_conversation()
    first = store.add_message(conv, "user", "a")
    store.delete_from(conv, first)
    assert store.add_message(conv, "user", "b") > first
    store.delete(conv)
    assert store.create_conversation() > conv


def test_delete_cascades_to_messages(store):
    conv = store.create_conversation()
    store.add_message(conv, "user", "a")
    store.delete(conv)
    raw = sqlite3.connect(store.path)
    assert raw.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    raw.close()


def test_bad_input_is_refused_with_a_message_and_writes_nothing(store):
    conv = store.create_conversation()
    before = store.conversation(conv)
    with pytest.raises(ValueError, match="role"):
        store.add_message(conv, "robot", "x")
    with pytest.raises(ValueError, match="JSON"):
        store.add_message(conv, "assistant", "x", stats={"when": object()})
    with pytest.raises(ValueError, match="empty"):
        store.rename(conv, "   ")
    with pytest.raises(ValueError, match="status"):
        StoredToken(1, "x", "maybe", 0, 0.5, None, None)
    with pytest.raises(NotFound, match="999"):
        store.add_message(999, "user", "x")
    for call in (lambda: store.rename(999, "t"), lambda: store.delete(999), lambda: store.messages(999)):
        with pytest.raises(NotFound):
            call()
    assert store.messages(conv) == []
    assert store.conversation(conv) == before


def test_a_failing_write_rolls_back_the_whole_transaction(store):
    conv = store.create_conversation()
    store.add_message(conv, "user", "kept")
    with pytest.raises(RuntimeError), store._write() as conn:
        conn.execute("DELETE FROM messages")
        raise RuntimeError("crash in the middle of a write")
    assert [m.content for m in store.messages(conv)] == ["kept"]


def test_wal_mode_foreign_keys_and_schema_version(store):
    from app.history.schema import APPLICATION_ID, SCHEMA_VERSION

    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store._conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_default_path_is_in_the_user_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))
    with HistoryStore() as s:
        assert s.path == tmp_path / "data" / "history.sqlite3"
    assert s.path.exists()


def test_damaged_token_data_keeps_the_message_text(store):
    conv = store.create_conversation()
    msg = store.add_message(conv, "assistant", "the text survives", all_statuses(), {"alpha": 0.5})
    store._conn.execute("UPDATE messages SET tokens = '[[1, 2', stats = 'nope' WHERE id = ?", (msg,))
    (m,) = store.messages(conv)
    assert (m.content, m.tokens, m.stats) == ("the text survives", (), {})
