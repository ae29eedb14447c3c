"""The conversation without Qt: its messages, its id and system prompt, one answer streaming at a time from any
source, and the observers a view renders from."""

from __future__ import annotations

import pytest

from app.history.records import StoredToken
from app.session import AnswerSource, Conversation, Message
from app.session.conversation import API, LIVE, REPLAY


def token(text: str, status: str = "accepted") -> StoredToken:
    return StoredToken(token_id=1, text=text, status=status, round=0, p=0.5, q=0.4, accept_prob=1.0)


def heard(conversation: Conversation) -> list:
    """Every observer call, in order, as (name, args)."""
    calls = []
    for name in ("replaced", "opened", "message_added", "tokens_added", "answer_ended", "system_prompt_changed"):
        getattr(conversation, name).connect(lambda *args, name=name: calls.append((name, args)))
    return calls


def test_an_answer_streams_tokens_with_their_fates_and_ends_once():
    conversation = Conversation()
    conversation.add(Message("user", "hi"))
    calls = heard(conversation)
    params = object()
    answer = conversation.begin_answer(AnswerSource(LIVE, "tiny (fp32)", "self", lambda: params))
    assert answer.index == 1 and conversation.answering and answer.source.params() is params
    message = conversation.messages[1]
    assert message.streaming and message.stats == {"target": "tiny (fp32)", "draft": "self"}
    first, second = [token("a"), token("x", "rejected")], [token("b", "corrected")]
    conversation.append_tokens(1, first)
    conversation.append_tokens(1, second)
    assert message.text == "ab" and [t.status for t in message.tokens] == ["accepted", "rejected", "corrected"]
    assert message.content == ""  # the text is kept once the answer ends
    ended = conversation.end_answer(partial=True, stats={"new_tokens": 2}, db_id=7)
    assert ended is message and not conversation.answering
    assert (message.content, message.partial, message.db_id, message.streaming) == ("ab", True, 7, False)
    assert message.stats == {"target": "tiny (fp32)", "draft": "self", "new_tokens": 2}
    assert calls == [("message_added", (1,)), ("tokens_added", (1, first)), ("tokens_added", (1, second)),
                     ("answer_ended", (1,))]
    with pytest.raises(RuntimeError, match="no answer"):
        conversation.end_answer(partial=False, stats={})


def test_one_answer_at_a_time_and_the_chat_stays_while_it_streams():
    conversation = Conversation()
    conversation.begin_answer(AnswerSource(REPLAY, "t", "d", dict))
    for change in (lambda: conversation.begin_answer(AnswerSource(LIVE, "t", "d", dict)),
                   conversation.open, lambda: conversation.truncate(0)):
        with pytest.raises(RuntimeError, match="streaming"):
            change()
    assert len(conversation.messages) == 1


def test_every_source_starts_the_same_way_and_a_served_answer_says_so():
    headers = {}
    for kind in (LIVE, REPLAY, API):
        conversation = Conversation()
        answer = conversation.begin_answer(AnswerSource(kind, "target", "draft", dict))
        headers[kind] = conversation.messages[answer.index].stats
        assert answer.source.decoding == (kind != REPLAY)
    assert headers[LIVE] == headers[REPLAY] == {"target": "target", "draft": "draft"}
    assert headers[API] == {"target": "target", "draft": "draft", "source": "api"}


def test_opening_another_chat_replaces_everything_and_the_turns_follow():
    conversation = Conversation()
    conversation.conv_id = 3
    conversation.add(Message("user", "old"))
    calls = heard(conversation)
    conversation.open(9, "  be brief ", [Message("user", "q"), Message("assistant", tokens=[token("a")])])
    assert conversation.conv_id == 9 and [m.text for m in conversation.messages] == ["q", "a"]
    assert calls == [("system_prompt_changed", ("  be brief ",)), ("replaced", ()), ("opened", ())]
    assert conversation.turns() == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"},
                                    {"role": "assistant", "content": "a"}]
    assert conversation.last_user_text() == "q"
    calls.clear()
    conversation.set_system_prompt("  be brief ")  # unchanged: nobody is told
    conversation.open()  # a new chat
    assert (conversation.conv_id, conversation.messages, conversation.turns()) == (None, [], [])
    assert calls == [("system_prompt_changed", ("",)), ("replaced", ()), ("opened", ())]


def test_truncating_drops_the_tail_and_returns_it():
    conversation = Conversation()
    for text in ("one", "two", "three"):
        conversation.add(Message("user", text))
    calls = heard(conversation)
    dropped = conversation.truncate(1)
    assert [m.content for m in dropped] == ["two", "three"] and [m.content for m in conversation.messages] == ["one"]
    assert calls == [("replaced", ())]  # the same chat: not "opened"
