"""Tiny random-weight target/draft pairs shared by the engine tests (built in memory, never saved)."""

from __future__ import annotations

import pytest
from tiny_models import noisy_copy, tiny_model


@pytest.fixture(scope="session")
def vocab8_pair():
    """Vocabulary 8, one layer: 8^3 continuations are enumerable and a sample costs ~2 ms. alpha ~0.63."""
    target = tiny_model(vocab_size=8, layers=1, seed=0, scale=4.0)
    return target, noisy_copy(target, 1.5)


@pytest.fixture(scope="session")
def vocab34_pair():
    """The character-vocabulary pair of tests/tiny_models (two layers, 256 positions)."""
    target = tiny_model()
    return target, noisy_copy(target, 1.5)


@pytest.fixture
def one_thread():
    """The kernel's pool at one thread: on a shared 2-core machine two threads per ~10 µs pass only wait."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
