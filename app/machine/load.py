"""How loaded the machine was while a timing ran, and the rule that calls it busy. No torch, no Qt.

A timing taken while other processes hold the cores is slower, and slower unevenly: a thread count, a
kernel path or a drafter can win only because its rivals were timed in a worse moment. So every cached
timing carries a `Load`, and one taken on a busy machine is kept only until a load on a quiet one
measures it again (machine_profile.py).

Busy, concretely (both read over the timing itself, from the thread that ran it):
- other work fills more than BUSY_OTHERS of the cores: (1-minute load average - this process's own
  CPU/wall share) / cores > BUSY_OTHERS. The load average lags by about a minute, so this catches a
  machine that has been busy for a while;
- or the measuring thread got less than BUSY_SHARE of the CPU it asked for: its CPU time against its
  CPU time plus the time it sat runnable waiting for a core (Linux's per-thread run delay, which does
  not count a thread sleeping at a barrier); without a run delay (macOS, Windows), its CPU time against
  wall time. This one reacts at once, where the load average lags (docs/busy-machine.md).

The readings come from `reader` (the real machine); `use_reader` swaps in another source, so tests can
plant a busy or a quiet machine without touching any timing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

BUSY_OTHERS = 0.5  # other processes' load per core above which a timing is called busy
BUSY_SHARE = 0.85  # the measuring thread's CPU share below which a timing is called busy
SPOT_SECONDS = 0.1  # how long `spot()` spins when no timing runs: ten of /proc/stat's 10 ms ticks


@dataclass(frozen=True)
class Reading:
    """The machine at one instant: counters whose differences over a timing make a Load."""

    loadavg: float  # 1-minute load average of the whole machine
    thread_cpu: float  # CPU seconds of the calling thread so far
    process_cpu: float  # CPU seconds of this process (all its threads) so far
    run_delay: float | None = None  # seconds the calling thread sat runnable without a core (Linux), else None
    machine_cpu: float | None = None  # CPU seconds all the machine's cores have spent busy (Linux), else None


def read_machine() -> Reading:
    try:
        loadavg = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has none: the share alone decides there
        loadavg = 0.0
    return Reading(loadavg, time.thread_time(), time.process_time(), _run_delay(), _machine_cpu())


def _machine_cpu() -> float | None:
    """Busy CPU seconds of every core so far, from the first line of /proc/stat: user, nice, system, irq,
    softirq and steal (the hypervisor's other guests slow a timing as much as a local process does)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
        user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None


def _run_delay() -> float | None:
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


reader: Callable[[], Reading] = read_machine


@contextmanager
def use_reader(read: Callable[[], Reading]) -> Iterator[None]:
    """Read the machine through `read` inside the block (tests plant a busy or a quiet machine)."""
    global reader
    previous, reader = reader, read
    try:
        yield
    finally:
        reader = previous


@dataclass(frozen=True)
class Load:
    """The machine while one timing ran, as stored beside the timing in the cost cache."""

    loadavg: float  # 1-minute load average at the end of the timing
    cores: int
    own: float  # this process's CPU seconds per wall second over the timing (its own share of loadavg)
    share: float  # the measuring thread's CPU share: CPU / (CPU + run delay), or CPU / wall
    seconds: float  # wall seconds of the timing

    @property
    def others(self) -> float:
        """Other processes' load per core."""
        return max(0.0, self.loadavg - self.own) / max(1, self.cores)

    @property
    def busy(self) -> bool:
        return self.others > BUSY_OTHERS or self.share < BUSY_SHARE

    @property
    def text(self) -> str:
        """For people: "quiet (load 0.4 on 2 cores, CPU share 0.99)"."""
        state = "busy" if self.busy else "quiet"
        return f"{state} (load {self.loadavg:.1f} on {self.cores} cores, CPU share {self.share:.2f})"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Load:
        return cls(float(data["loadavg"]), int(data["cores"]), float(data["own"]), float(data["share"]),
                   float(data["seconds"]))


def between(start: Reading, end: Reading, wall: float) -> Load:
    wall = max(wall, 1e-9)
    cpu = max(0.0, end.thread_cpu - start.thread_cpu)
    if start.run_delay is not None and end.run_delay is not None:
        wanted = cpu + max(0.0, end.run_delay - start.run_delay)
        share = cpu / wanted if wanted > 0 else 1.0
    else:
        share = min(1.0, cpu / wall)
    own = max(0.0, end.process_cpu - start.process_cpu) / wall
    return Load(end.loadavg, os.cpu_count() or 1, own, round(share, 3), round(wall, 3))


class Watch:
    """The Load over a block of timing work: `with watch() as w: ...`, then `w.load`."""

    def __init__(self) -> None:
        self.load: Load | None = None

    def __enter__(self) -> Watch:
        self._start, self._t0 = reader(), time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.load = between(self._start, reader(), time.perf_counter() - self._t0)


def watch() -> Watch:
    return Watch()


def spot(seconds: float = SPOT_SECONDS) -> Load:
    """The machine now, when nothing is being timed: a short spin on this thread reads its CPU share.

    The spin needs one core, but a timing runs on every core. On two cores with another program holding
    one, the spin read a share of 1.0 while each timing read 0.72 and was called busy: every launch
    measured again, and was busy again. So where the machine's counters show (Linux) what other work
    took meanwhile, the share is the one a thread of a timing on every core would get beside it."""
    start, t0 = reader(), time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        pass
    stop = reader()
    wall = max(time.perf_counter() - t0, 1e-9)
    load = between(start, stop, wall)
    if start.machine_cpu is None or stop.machine_cpu is None:
        return load
    ours = stop.process_cpu - start.process_cpu
    others = max(0.0, stop.machine_cpu - start.machine_cpu - ours) / wall  # cores' worth of other work
    whole = load.cores / (load.cores + others)
    return replace(load, share=round(min(load.share, whole), 3))
