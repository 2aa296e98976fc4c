"""`python -m tests.adapter.kubeemu [--port N] [--load FILE...]`: serve a ClusterEmulator on 127.0.0.1."""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from pathlib import Path

from tests.adapter.kubeemu.server import EmulatorThread, read_objects


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.adapter.kubeemu")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--load", action="append", default=[], help="YAML objects to store first")
    args = parser.parse_args()
    server = EmulatorThread(port=args.port).start()
    for path in args.load:
        items = read_objects(Path(path))
        server.call(lambda emu: [emu.put_object(o) for o in items])
    print(server.url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
