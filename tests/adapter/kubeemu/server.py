"""Running a `ClusterEmulator` on 127.0.0.1: in a daemon thread with its own event loop, or as a process.

Tests must not share the pytest loop with the synchronous client (the server could not answer while
the test blocks in urllib3): `EmulatorThread` runs `asyncio.run()` in a thread, publishes the URL, and
`call(fn)` runs `fn(emulator)` on that loop, which is the only safe way to touch the emulator's state.

    python -m tests.adapter.kubeemu [--port 0] [--load cluster.yaml]

prints the URL as its first stdout line once listening and serves until SIGTERM/SIGINT.
"""
from __future__ import annotations

import asyncio
import json
import concurrent.futures
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

import kmock
from ruamel.yaml import YAML

from tests.adapter.kubeemu.emulator import ClusterEmulator

LOOPBACK = "127.0.0.1"  # never anything else: tests must not reach beyond this machine
_T = TypeVar("_T")


class EmulatorThread:
    def __init__(self, *, port: int = 0, **options: Any) -> None:
        self._port = port
        self._options = options
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="kube-emulator", daemon=True)
        self._error: BaseException | None = None
        self.emulator: ClusterEmulator | None = None
        self.url = ""

    def start(self) -> "EmulatorThread":
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the emulator did not start within 30 s")
        if self._error is not None:
            raise RuntimeError("the emulator failed to start") from self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def call(self, fn: Callable[[ClusterEmulator], _T], timeout: float = 10) -> _T:
        """Run `fn(emulator)` on the emulator's loop and return its result."""
        assert self._loop is not None and self.emulator is not None
        emulator = self.emulator

        async def _call() -> _T:
            return fn(emulator)

        future: concurrent.futures.Future[_T] = asyncio.run_coroutine_threadsafe(_call(), self._loop)
        return future.result(timeout)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001  # reason: reported to the starting thread
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with ClusterEmulator(**self._options) as emu, kmock.Server(emu, host=LOOPBACK, port=self._port) as srv:
            self.emulator = emu
            self.url = f"http://{srv.host}:{srv.port}"
            self._ready.set()
            await self._stop.wait()


def read_objects(path: Path) -> list[dict[str, Any]]:
    """The objects of a YAML/JSON dump (documents and `kind: List` items) as the API would hold them:
    plain JSON data, timestamps as RFC 3339 strings."""
    yaml = YAML(typ="safe", pure=True)
    with path.open(encoding="utf-8") as handle:
        docs = [d for d in yaml.load_all(handle) if d]
    items = [i for d in docs for i in (d.get("items", []) if str(d.get("kind", "")).endswith("List") else [d])]
    encoded = json.dumps(items, default=lambda o: o.isoformat().replace("+00:00", "Z"))
    return list(json.loads(encoded))


def kubeconfig_text(url: str) -> str:
    """A kubeconfig pointing at the emulator: no TLS, no credentials."""
    return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: emu\n  cluster:\n    server: {url}\n"
            "contexts:\n- name: emu\n  context:\n    cluster: emu\n    user: emu\n"
            "current-context: emu\nusers:\n- name: emu\n  user: {}\n")


def write_kubeconfig(url: str, path: Path) -> Path:
    path.write_text(kubeconfig_text(url))
    return path
