"""Work queues with client-go's semantics, timed by the controllers' clock.

- an item waiting in the queue is queued once, however often it is added (dedup);
- an item being processed is never handed to a second worker: added meanwhile, it is queued again
  when the first worker calls `done`;
- `add_after` holds an item until the clock passes its due time (policy timeouts, cron schedules,
  `ttlSecondsAfterFinished`); the due time is read from the injected clock, so a `FakeClock` moved
  by a test releases it;
- `add_rate_limited` re-adds a failed item after an exponential backoff (5 ms doubling to 1000 s,
  client-go's default) and counts its failures, which `forget` resets (`--max-requeue-num`).

`ShardedQueue` routes items to one of N queues by a hash of their key, each drained by one worker,
so all requests for one Job are handled in order by the same worker (Volcano's job controller does
this with `fnv32(key) % workers`).
"""
from __future__ import annotations

import collections
import heapq
import itertools
import threading
import zlib
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cluster_adapter.controllers.clock import Clock

T = TypeVar("T", bound=Hashable)
BASE_DELAY_S = 0.005  # client-go's ItemExponentialFailureRateLimiter defaults
MAX_DELAY_S = 1000.0
POLL_S = 0.05  # how often a waiting worker looks at the clock for delayed items


class WorkQueue(Generic[T]):
    def __init__(self, clock: Clock, *, base_delay_s: float = BASE_DELAY_S, max_delay_s: float = MAX_DELAY_S) -> None:
        self._clock = clock
        self._base, self._max = base_delay_s, max_delay_s
        self._cond = threading.Condition()
        self._ready: collections.deque[T] = collections.deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._delayed: list[tuple[float, int, T, bool]] = []  # (due, order, item, a retry after a failure)
        self._seq = itertools.count()
        self._failures: dict[T, int] = {}

    def add(self, item: T) -> None:
        with self._cond:
            if item in self._dirty:
                return
            self._dirty.add(item)
            if item not in self._processing:
                self._ready.append(item)
                self._cond.notify()

    def add_after(self, item: T, delay_s: float, *, retry: bool = False) -> None:
        if delay_s <= 0:
            self.add(item)
            return
        with self._cond:
            heapq.heappush(self._delayed, (self._clock.now() + delay_s, next(self._seq), item, retry))
            self._cond.notify()

    def add_rate_limited(self, item: T) -> None:
        with self._cond:
            count = self._failures.get(item, 0)
            self._failures[item] = count + 1
        self.add_after(item, min(self._base * (2 ** count), self._max), retry=True)

    def num_requeues(self, item: T) -> int:
        with self._cond:
            return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        with self._cond:
            self._failures.pop(item, None)

    def get(self, stop: threading.Event, *, poll_s: float = POLL_S) -> T | None:
        """The next ready item (blocks), or None once `stop` is set. Call `done(item)` after."""
        with self._cond:
            while not stop.is_set():
                self._release_due()
                if self._ready:
                    item = self._ready.popleft()
                    self._dirty.discard(item)
                    self._processing.add(item)
                    return item
                self._cond.wait(poll_s)
        return None

    def take_ready(self, *, include_retries: bool = False) -> list[T]:
        """Every item ready now (with `include_retries`, failed items too, whatever their backoff), marked
        as processing. Used when the caller drives the queue (`--once`, tests with a fake clock)."""
        with self._cond:
            self._release_due(retries=include_retries)
            items = list(self._ready)
            self._ready.clear()
            for item in items:
                self._dirty.discard(item)
                self._processing.add(item)
            return items

    def done(self, item: T) -> None:
        with self._cond:
            self._processing.discard(item)
            if item in self._dirty:
                self._ready.append(item)
                self._cond.notify()

    def next_due(self) -> float | None:
        with self._cond:
            return self._delayed[0][0] if self._delayed else None

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready) + len(self._delayed)

    def pending(self) -> int:
        """Items ready now (not counting held ones)."""
        with self._cond:
            self._release_due()
            return len(self._ready)

    def _release_due(self, *, retries: bool = False) -> None:
        now = self._clock.now()
        if retries and any(entry[3] for entry in self._delayed):
            kept = [entry for entry in self._delayed if not entry[3]]
            for entry in self._delayed:
                if entry[3]:
                    self._make_ready(entry[2])
            self._delayed = kept
            heapq.heapify(self._delayed)
        while self._delayed and self._delayed[0][0] <= now:
            self._make_ready(heapq.heappop(self._delayed)[2])

    def _make_ready(self, item: T) -> None:
        if item not in self._dirty:
            self._dirty.add(item)
            if item not in self._processing:
                self._ready.append(item)
        self._cond.notify()


class ShardedQueue(Generic[T]):
    """N queues; an item goes to the one its key hashes to."""

    def __init__(self, clock: Clock, shards: int, key: Callable[[T], str]) -> None:
        self.shards = [WorkQueue[T](clock) for _ in range(max(1, shards))]
        self._key = key

    def of(self, item: T) -> WorkQueue[T]:
        return self.shards[zlib.crc32(self._key(item).encode()) % len(self.shards)]

    def add(self, item: T) -> None:
        self.of(item).add(item)

    def add_after(self, item: T, delay_s: float) -> None:
        self.of(item).add_after(item, delay_s)

    def __len__(self) -> int:
        return sum(len(shard) for shard in self.shards)

    def add_rate_limited(self, item: T) -> None:
        self.of(item).add_rate_limited(item)

    def num_requeues(self, item: T) -> int:
        return self.of(item).num_requeues(item)

    def forget(self, item: T) -> None:
        self.of(item).forget(item)

    def done(self, item: T) -> None:
        self.of(item).done(item)

    def take_ready(self, *, include_retries: bool = False) -> list[T]:
        return [item for shard in self.shards for item in shard.take_ready(include_retries=include_retries)]

    def pending(self) -> int:
        return sum(shard.pending() for shard in self.shards)

    def next_due(self) -> float | None:
        dues = [d for d in (s.next_due() for s in self.shards) if d is not None]
        return min(dues) if dues else None
