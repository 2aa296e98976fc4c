"""CPython's cyclic garbage collector paused around work that allocates many objects and frees few.

Reading a dump and running a session each allocate millions of objects that stay alive until the work
ends; every collection those allocations trigger walks all of them again, for nothing to reclaim
(reading the realistic M dump, CPU s: read 2.2 -> 1.0, build 1.7 -> 1.1; a 100,000-pod session: 15%).
Reference counting still frees everything acyclic as it goes; the collector's setting is as the caller
had it afterwards, so the work's own cycles are collected later.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block, and back on after it if it was on before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # the first allocation after this walks what the block allocated as generation 0 (about
            # 0.1 s after an L session); moving it to the oldest generation untraversed (gc.freeze +
            # unfreeze) would save that, but the collector would not count it there and never collect it
            # again: each session's cycles would stay for good (1,200 small sessions grew a process by
            # 230 MB)
            gc.enable()
