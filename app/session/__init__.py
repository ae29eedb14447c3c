"""The chat model: what a front end (the window, the local server) holds about its session, without Qt.

chat_model (ChatModel: the loaded pair, its drafter choice and live γ, the static decoder, the token-tree
mode, one State, observers), observers (small callback events), loading (a pair loaded and chosen, the
loader's work without its signals). Like napari's ViewerModel under its QtViewer: the window observes it
and adapts its events to Qt; `speclens serve` holds its pair in one too. No Qt and no torch at import.
"""

from .chat_model import ChatModel, State
from .observers import Observers

__all__ = ["ChatModel", "Observers", "State"]
