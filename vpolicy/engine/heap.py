"""Go's container/heap, exactly: Volcano's PriorityQueue is built on it, and its quirks are behaviour.

Volcano compares *live* values (a queue's share changes after each placement) inside a binary heap, so
the heap is not always consistent; which job or queue pops next depends on the precise sift-up and
sift-down steps. Reproducing them is the only way to pop in Volcano's order.
"""
from __future__ import annotations

import bisect
import functools
import heapq
import itertools
from typing import TYPE_CHECKING, Callable, Generic, Iterable, Protocol, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsAllComparisons

T = TypeVar("T")


class Queue(Protocol[T]):
    """What actions use of a priority queue (PriorityQueue and SortedQueue both are one)."""

    def __len__(self) -> int: ...
    def empty(self) -> bool: ...
    def push(self, item: T) -> None: ...
    def pop(self) -> T: ...


class PriorityQueue(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()):
        self._less = less
        self._items: list[T] = []
        for item in items:
            self.push(item)

    def __len__(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def push(self, item: T) -> None:
        self._items.append(item)
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        items = self._items
        n = len(items) - 1
        items[0], items[n] = items[n], items[0]
        self._down(0, n)
        return self._items.pop()

    # Go's up and down, with the comparisons and swaps written inline (this runs for every task pop).
    def _up(self, j: int) -> None:
        items, less = self._items, self._less
        while j > 0:
            i = (j - 1) // 2
            if i == j or not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def _down(self, i0: int, n: int) -> None:
        items, less = self._items, self._less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(items[j2], items[j1]):
                j = j2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j


class SortedQueue(Generic[T]):
    """PriorityQueue's interface over a list kept sorted, for a `less` that is a fixed strict total
    order (it compares only values that never change, and never ties): Go's heap then pops exactly
    the sorted order, and sorting once costs far fewer comparisons than sifting on every pop."""

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = (), *, presorted: bool = False):
        """`presorted`: `items` already come in `less` order (the caller sorted them by keys)."""
        self._key: Callable[[T], SupportsAllComparisons] = functools.cmp_to_key(
            lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))
        if presorted:
            self._items = list(items)[::-1]  # the next item is at the end
        else:
            self._items = sorted(items, key=self._key, reverse=True)

    def __len__(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def push(self, item: T) -> None:
        keys = [self._key(x) for x in self._items]
        self._items.insert(len(keys) - bisect.bisect_left(keys[::-1], self._key(item)), item)

    def pop(self) -> T:
        return self._items.pop()


class KeyedQueue(Generic[T]):
    """PriorityQueue's interface for a `less` that is the order of a key computed from an item when it
    is pushed: a strict total order over values that do not change while the item is queued. Go's heap
    then pops exactly the smallest key each time, so a heap of keys (compared in C) pops the same
    items in the same order as sifting with `less`."""

    def __init__(self, key: Callable[[T], tuple[object, ...]], items: Iterable[T] = ()):
        self._key = key
        self._count = itertools.count()  # keys are distinct; the count only keeps items out of comparisons
        self._heap: list[tuple[tuple[object, ...], int, T]] = [(key(item), next(self._count), item) for item in items]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def empty(self) -> bool:
        return not self._heap

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, (self._key(item), next(self._count), item))

    def pop(self) -> T:
        return heapq.heappop(self._heap)[2]
