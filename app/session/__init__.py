"""The session of a front end, without Qt: what it holds about its pair and its open chat.

chat_model (ChatModel: the loaded pair, its drafter choice and live γ, the static decoder, the token-tree
mode, one State, observers), conversation (Conversation: the open chat's messages, its id in the history,
its system prompt and the answer streaming into it, whatever its source), answer_loop (AnswerLoop: one
answer's live loop, run by every front end: params with the live γ, every round to the live controller and
the machine check), chat_params (the sampling a chat starts with), observers (small callback events),
loading (a pair loaded and chosen, the loader's work without its signals). Like napari's
ViewerModel under its QtViewer: the window observes them and adapts their events to Qt; `speclens serve`
holds its pair in a ChatModel too. No Qt and no torch at import.
"""

from .answer_loop import AnswerLoop
from .chat_model import ChatModel, State
from .conversation import Answer, AnswerSource, Conversation, Message
from .observers import Observers

__all__ = ["Answer", "AnswerLoop", "AnswerSource", "ChatModel", "Conversation", "Message", "Observers", "State"]
