"""SpecLens: exact speculative decoding, live."""

import os

__version__ = "0.1.0"

# OpenMP threads that spin while waiting collapse when another process holds a core: the bf16 packed
# path at 2 threads on a 2-core machine with two other busy processes ran 1.2 tok/s spinning, 21 tok/s
# passive (1 thread: 7.9). Set before torch loads libgomp; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
