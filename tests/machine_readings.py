"""Planted machine readings for the busy-machine rule (app.machine.load.use_reader): the CPU
clocks advance with the wall clock, as for a thread that had a core throughout; only the load differs."""

from __future__ import annotations

import os
import time

from app.machine.load import Reading


def quiet() -> Reading:
    now = time.perf_counter()
    return Reading(loadavg=0.0, thread_cpu=now, process_cpu=now, run_delay=0.0)


def busy() -> Reading:
    """Other processes fill every core twice over (as a parallel build does)."""
    now = time.perf_counter()
    return Reading(loadavg=2.0 * (os.cpu_count() or 1) + 1.0, thread_cpu=now, process_cpu=now, run_delay=0.0)
