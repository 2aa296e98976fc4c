"""What a controller is, and the registry that finds controllers by name (Volcano's `framework`).

Each controller module defines a `Controller` subclass and decorates it with `@register`; importing
the module registers it (`load_builtin` imports ours). A second controller with a registered name is
an error at import time (`DuplicateControllerError`), as Volcano's `RegisterController` refuses it.
`select` turns `--controllers '*,-gc'` into the names to run.

A controller declares the resources its store must hold, is initialised once with the shared
`Options` (where it registers its store handlers, which only enqueue), and then processes items
from its own sharded work queue: `handle` runs `process` and on failure re-adds the item with
backoff up to `--max-requeue-num` times (then `gave_up` decides). The manager decides who runs
the queue: worker threads (`run`), or the caller (`drain`, for `--once` and tests).
"""
from __future__ import annotations

import abc
import importlib
import logging
import threading
from collections.abc import Hashable
from typing import Any, ClassVar

from cluster_adapter.controllers.options import Options
from cluster_adapter.controllers.workqueue import ShardedQueue
from cluster_adapter.kube.client import Resource
from cluster_adapter.kube.retry import NotLeader

log = logging.getLogger(__name__)

BUILTIN_MODULES = ("cluster_adapter.controllers.queue", "cluster_adapter.controllers.podgroup",
                   "cluster_adapter.controllers.job.controller", "cluster_adapter.controllers.cronjob",
                   "cluster_adapter.controllers.gc", "cluster_adapter.controllers.hypernode")
# `--once` converges in fewer rounds when queues exist before jobs are synced, and jobs before the GC.
DRAIN_ORDER = ("queue-controller", "pg-controller", "job-controller", "cronjob-controller", "gc-controller",
               "hypernode-controller")
_REGISTRY: dict[str, type["Controller"]] = {}


class DuplicateControllerError(ValueError):
    """Two controllers registered under one name."""


class UnknownControllerError(ValueError):
    """`--controllers` names a controller that is not registered."""


class Controller(abc.ABC):
    name: ClassVar[str]  # Volcano's name, e.g. "job-controller"
    resources: ClassVar[tuple[Resource, ...]]  # what the shared store must hold for this controller

    def __init__(self) -> None:
        self.options: Options | None = None
        self.queue: ShardedQueue[Any] | None = None
        self.processed = 0
        self.failed = 0

    def initialize(self, options: Options) -> None:
        self.options = options
        self.queue = ShardedQueue(options.clock, options.settings.workers_for(self.name), self.key_of)
        self.setup(options)

    @abc.abstractmethod
    def setup(self, options: Options) -> None:
        """Register store handlers (which only enqueue)."""

    @abc.abstractmethod
    def process(self, item: Any) -> None:
        """One unit of work; raise to have it retried with backoff."""

    def key_of(self, item: Any) -> str:
        return str(item)

    def gave_up(self, item: Any, error: Exception) -> None:
        """Called when an item failed `--max-requeue-num` times (default: log and drop it)."""
        log.warning("%s: dropping %s after %d failures: %s", self.name, item, self.opts.settings.max_requeue_num, error)

    @property
    def opts(self) -> Options:
        assert self.options is not None, f"{self.name} used before initialize()"
        return self.options

    @property
    def work(self) -> ShardedQueue[Any]:
        assert self.queue is not None, f"{self.name} used before initialize()"
        return self.queue

    # running the queue -------------------------------------------------------------------------------
    def handle(self, item: Hashable) -> None:
        queue = self.work
        try:
            self.process(item)
            queue.forget(item)
            self.processed += 1
        except NotLeader:
            log.info("%s: not the leader; %s left for the next one", self.name, item)
        except Exception as exc:  # noqa: BLE001  # reason: any failure is retried, never kills a worker
            self.failed += 1
            limit = self.opts.settings.max_requeue_num
            if limit < 0 or queue.num_requeues(item) < limit:
                log.info("%s: %s failed (%s); retrying", self.name, item, exc)
                queue.add_rate_limited(item)
            else:
                queue.forget(item)
                self.gave_up(item, exc)
        finally:
            queue.done(item)

    def drain(self) -> int:
        """Process every item ready now (failed ones too) in the calling thread; returns how many."""
        items = self.work.take_ready(include_retries=True)
        for item in items:
            self.handle(item)
        return len(items)

    def run(self, stop: threading.Event) -> list[threading.Thread]:
        threads = []
        for index, shard in enumerate(self.work.shards):
            def loop(shard: Any = shard) -> None:
                while (item := shard.get(stop)) is not None:
                    self.handle(item)
            thread = threading.Thread(target=loop, name=f"{self.name}-{index}", daemon=True)
            thread.start()
            threads.append(thread)
        return threads


def register(cls: type[Controller]) -> type[Controller]:
    name = getattr(cls, "name", "")
    if not name:
        raise ValueError(f"{cls.__qualname__} has no name")
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise DuplicateControllerError(f"a controller named {name!r} is already registered "
                                       f"({_REGISTRY[name].__module__}.{_REGISTRY[name].__qualname__})")
    _REGISTRY[name] = cls
    return cls


def registered() -> dict[str, type[Controller]]:
    """Every registered controller, ours first in drain order (queue, pg, job, cronjob, gc), then by name."""
    def rank(name: str) -> tuple[int, str]:
        return (DRAIN_ORDER.index(name) if name in DRAIN_ORDER else len(DRAIN_ORDER), name)
    return {name: _REGISTRY[name] for name in sorted(_REGISTRY, key=rank)}


def load_builtin() -> dict[str, type[Controller]]:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return registered()


def select(spec: str, known: list[str] | tuple[str, ...]) -> list[str]:
    """Volcano's `--controllers`: `*` every controller, `foo` enables foo, `-foo` disables foo.

    Names may be written with or without the `-controller` suffix (`gc` = `gc-controller`). The
    result keeps the registry's order.
    """
    def full(word: str) -> str:
        name = word if word in known else f"{word}-controller"
        if name not in known:
            raise UnknownControllerError(f"unknown controller {word!r} (known: {', '.join(sorted(known))})")
        return name

    enabled: set[str] = set()
    disabled: set[str] = set()
    star = False
    for word in (w.strip() for w in spec.split(",")):
        if not word:
            continue
        if word == "*":
            star = True
        elif word.startswith("-"):
            disabled.add(full(word[1:]))
        else:
            enabled.add(full(word))
    return [n for n in known if (star or n in enabled) and n not in disabled]
