"""SpecLens: exact speculative decoding, live."""

__version__ = "0.1.0"
