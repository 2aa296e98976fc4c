"""The few API calls `up` makes as the cluster's admin, with the standard library only.

`up` must work before the Python client is installed (CI builds the control plane from a fixture,
users from a shell), so this speaks HTTPS + JSON directly with the admin client certificate.
"""
from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class Admin:
    def __init__(self, server: str, certs: Path) -> None:
        self.server = server
        self.context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.context.load_cert_chain(str(certs / "admin.crt"), str(certs / "admin.key"))

    def call(self, method: str, path: str, body: Any = None, *, timeout: float = 10.0,
             content_type: str = "application/json") -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method,
                                         headers={"Content-Type": content_type, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=timeout) as answer:
                raw = answer.read()
                return answer.status, _json(raw)
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read())

    def wait(self, what: str, check: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except (OSError, urllib.error.URLError) as exc:
                last = exc
            time.sleep(0.2)
        raise TimeoutError(f"{what} not ready within {timeout:.0f} s (last error: {last})")

    def apply(self, collection: str, obj: dict[str, Any]) -> None:
        """Create `obj` at `collection`, or replace it when it exists (keeping its resourceVersion)."""
        name = obj["metadata"]["name"]
        code, answer = self.call("POST", collection, obj)
        if code == 409:
            code, current = self.call("GET", f"{collection}/{name}")
            if code == 200:
                obj = {**obj, "metadata": {**obj["metadata"],
                                           "resourceVersion": current["metadata"]["resourceVersion"]}}
                code, answer = self.call("PUT", f"{collection}/{name}", obj)
        if code not in (200, 201):
            raise RuntimeError(f"applying {collection}/{name}: HTTP {code}: {answer}")


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")
