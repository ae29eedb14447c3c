"""`speclens serve`: an OpenAI-compatible HTTP server over one engine, streaming every token's fate. No Qt here.

schema (requests and their validation), errors (OpenAI's error shape), host (the one engine and its
queue), stops (stop strings), usage (the statistics in the final usage), chunks (OpenAI response and
stream shapes), routes (the HTTP endpoints), auth (loopback and API key), history_sink (answers into
the history), baseline (the target-only step), server (uvicorn in a background thread).
"""

DEFAULT_HOST = "127.0.0.1"  # loopback: nothing outside this machine reaches the server unless asked
DEFAULT_PORT = 8765
MAX_WAITING = 4  # requests accepted and not yet started before new ones get 429 (`serve --queue`)
