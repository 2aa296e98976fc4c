"""What the `allocate` family adds to a pending pod for issue 22: an app label, pod affinity and
anti-affinity (required and preferred, by hostname or zone), topology spread constraints and a host
port — the kube-scheduler filters and scores Volcano's predicates and nodeorder plugins run.

Registered in `conformance.generate.POD_DECORATORS`; drawn from the case's own `random.Random`, so a
case stays a pure function of (family, seed, index). Labels are drawn from two apps so that terms match
some pods and not others; running pods get no terms (the family places them without asking either
engine), but pending pods of the same app placed earlier in the session count for later ones.
"""
from __future__ import annotations

import random
from typing import Any

APPS = ("x", "y")
KEYS = ("kubernetes.io/hostname", "zone")  # every generated node carries both labels
HOST_PORT = 8080


def _term(rng: random.Random) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": rng.choice(KEYS)}


def decorate(rng: random.Random, pod: dict[str, Any], builder: Any) -> None:
    """Give `pod` (a pending pod the family just drew) an app label and, each with its own chance, the
    relations issue 22 adds."""
    pod["metadata"].setdefault("labels", {})["app"] = rng.choice(APPS)
    spec = pod["spec"]
    affinity: dict[str, Any] = spec.setdefault("affinity", {})
    if rng.random() < 0.25:
        affinity.setdefault("podAntiAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(rng)]
    if rng.random() < 0.15:
        affinity.setdefault("podAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(rng)]
    if rng.random() < 0.2:
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        affinity.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng)}]
    if not affinity:
        del spec["affinity"]
    if rng.random() < 0.25:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.randint(1, 2), "topologyKey": rng.choice(KEYS),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}}]
    if rng.random() < 0.1:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": HOST_PORT}]
