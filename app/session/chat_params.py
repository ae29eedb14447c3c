"""The sampling a chat starts with, in every front end: the window's controls before the settings hold any,
and the `--temperature`, `--top-k`, `--top-p`, `--max-new-tokens` defaults of generate, record and serve.
DecodeParams' own defaults (T 1.0) are the engine's, for library use; a chat starts cooler. γ starts at the
live controllers' start value, since a chat's γ is on auto."""

from __future__ import annotations

from app.engine.params import DecodeParams
from app.engine.policy import AUTO_GAMMA_START

CHAT_PARAMS = DecodeParams(gamma=AUTO_GAMMA_START, temperature=0.7, max_new_tokens=256)
