"""The session of a front end, without Qt: what it holds about its pair and its open chat.

chat_model (ChatModel: the loaded pair, its drafter choice and live γ, the static decoder, the token-tree
mode, one State, observers), conversation (Conversation: the open chat's messages, its id in the history,
its system prompt and the answer streaming into it, whatever its source), observers (small callback
events), loading (a pair loaded and chosen, the loader's work without its signals). Like napari's
ViewerModel under its QtViewer: the window observes them and adapts their events to Qt; `speclens serve`
holds its pair in a ChatModel too. No Qt and no torch at import.
"""

from .chat_model import ChatModel, State
from .conversation import Answer, AnswerSource, Conversation, Message
from .observers import Observers

__all__ = ["Answer", "AnswerSource", "ChatModel", "Conversation", "Message", "Observers", "State"]
