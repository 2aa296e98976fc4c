"""The three PATCH flavours the official client sends, applied as the API server applies them.

- `application/merge-patch+json` (RFC 7386): mappings merge, `null` deletes, lists are replaced.
- `application/strategic-merge-patch+json`: a merge patch, except that the lists Kubernetes declares
  with a merge key (conditions by `type`, containers/env/volumes by `name`, ownerReferences by
  `uid`, taints by `key`) are merged item by item, and `finalizers` are unioned.
- `application/json-patch+json` (RFC 6902): via `jsonpatch`, as kmock itself does.
Server-side apply and `$patch` directives are not emulated.
"""
from __future__ import annotations

import copy
from typing import Any

import jsonpatch

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# list field name -> merge key (the patchMergeKey of the Kubernetes types a scheduler touches)
_MERGE_KEYS = {"conditions": "type", "containers": "name", "initContainers": "name", "env": "name",
               "volumes": "name", "volumeMounts": "mountPath", "ownerReferences": "uid", "taints": "key",
               "ports": "containerPort", "tolerations": "key"}
_SET_LISTS = frozenset({"finalizers"})


class PatchError(ValueError):
    """The patch cannot be applied (HTTP 422)."""


def apply(obj: dict[str, Any], patch: Any, content_type: str) -> dict[str, Any]:
    kind = content_type.split(";")[0].strip()
    if kind == JSON_PATCH:
        if not isinstance(patch, list):
            raise PatchError("a JSON patch must be a list of operations")
        try:
            return jsonpatch.apply_patch(obj, patch)  # type: ignore[no-any-return]  # reason: untyped library
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise PatchError(str(exc)) from exc
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be a JSON object")
    if kind in (MERGE, STRATEGIC):
        merged: dict[str, Any] = _merge(obj, patch, strategic=kind == STRATEGIC)
        return merged
    raise PatchError(f"unsupported patch type {kind!r}")


def _merge(target: Any, patch: Any, *, strategic: bool, field: str = "") -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif strategic and isinstance(value, list) and key in _SET_LISTS:
            merged = list(out.get(key) or [])
            merged += [v for v in value if v not in merged]
            out[key] = merged
        elif strategic and isinstance(value, list) and key in _MERGE_KEYS and isinstance(out.get(key), list):
            out[key] = _merge_list(out[key], value, _MERGE_KEYS[key])
        else:
            out[key] = _merge(out.get(key), value, strategic=strategic, field=key)
    return out


def _merge_list(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    out = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            out.append(copy.deepcopy(item))
            continue
        for index, existing in enumerate(out):
            if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]:
                out[index] = _merge(existing, item, strategic=True)
                break
        else:
            out.append(copy.deepcopy(item))
    return out
