"""Recordings: every event of an answer (or of a race's two runs) with its timing, the models, the
parameters and the machine, in a versioned gzip JSON-lines file. No Qt and no torch here: a
recording plays on a machine with neither models nor a GPU. The format: docs/recording-format.md."""

from .builder import RunBuilder, machine_info
from .format import (
    FORMAT_VERSION,
    SUFFIX,
    Recording,
    RecordingError,
    Run,
    Step,
    dumps_event,
    loads_event,
    read,
    write,
)

__all__ = [
    "FORMAT_VERSION",
    "SUFFIX",
    "Recording",
    "RecordingError",
    "Run",
    "RunBuilder",
    "Step",
    "dumps_event",
    "loads_event",
    "machine_info",
    "read",
    "write",
]
