"""CSV job traces -> a `Workload`: one job per row, in the same model as the YAML format.

The header row names the columns, in any order: `submit_time,job,queue,pods,cpu,memory,gpu,duration,
priority` (all required; `priority` may be empty). `submit_time` and `duration` are seconds or durations
(`90s`, `2h`); `job` is `name` or `namespace/name`; `cpu` and `memory` are quantities (`500m`, `4Gi`),
`gpu` a whole number of `nvidia.com/gpu`; `priority` a PriorityClass name or a number. Every mistake is
a `workload.*` diagnostic at its `file:line:col` (columns counted on the line as written), all raised
together; an empty line or one starting with `#` is skipped.

This module only reads; `vpolicy.sim.workload.check_against` checks queues and classes against the cluster.
"""
from __future__ import annotations

import csv
from pathlib import Path

from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy.load import fields, textfile, vcjob
from vpolicy.model import quantity
from vpolicy.sim import workload as wl
from vpolicy.source import SourceFile, Span, remember

COLUMNS = ("submit_time", "job", "queue", "pods", "cpu", "memory", "gpu", "duration", "priority")
BAD_HEADER = "workload.bad-header"
UNREADABLE = "workload.unreadable-file"
GPU = "nvidia.com/gpu"


def load_trace(path: str | Path) -> wl.Workload:
    """Read a CSV trace; bad rows raise PolicyError with every problem found."""
    name = str(path)
    try:
        text = textfile.read_text(path, bom=True)
    except textfile.UnreadableFile as exc:
        raise PolicyError([exc.diagnostic(UNREADABLE, help="a trace is a UTF-8 CSV file with a header row")]) from exc
    return parse_trace(text, name=name)


def parse_trace(text: str, *, name: str) -> wl.Workload:
    remember(SourceFile(name=name, text=text))
    lines = text.splitlines()
    diags: list[Diagnostic] = []
    rows = [(i + 1, line) for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise PolicyError.single(BAD_HEADER, "the trace is empty", Span(name, 1, 1),
                                 help=f"start with the header row: {','.join(COLUMNS)}")
    header_line, header_text = rows[0]
    header = [h.strip() for h in next(csv.reader([header_text]))]
    columns = _columns(header_text)
    for i, column in enumerate(header):
        if column not in COLUMNS:
            diags.append(Diagnostic(BAD_HEADER, f"unknown column '{column}'", _span(name, header_line, columns, i,
                                                                                   header),
                                    help=did_you_mean(column, COLUMNS) or f"columns: {','.join(COLUMNS)}"))
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        diags.append(Diagnostic(BAD_HEADER, f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                                Span(name, header_line, 1), help=f"the header row is {','.join(COLUMNS)}"))
    if diags:
        raise PolicyError(diags)
    index = {c: header.index(c) for c in COLUMNS}
    templates: list[wl.JobTemplate] = []
    seen: dict[str, Span] = {}
    for line_no, line in rows[1:]:
        cells = next(csv.reader([line]))
        offsets = _columns(line)
        if len(cells) != len(header):
            diags.append(Diagnostic(wl.BAD_VALUE, f"row has {len(cells)} fields, the header {len(header)}",
                                    Span(name, line_no, 1), help="one value per column; quote values with commas"))
            continue
        row = _Row(name, line_no, cells, offsets, index, diags)
        template = row.template()
        if template is None:
            continue
        key = f"{template.namespace}/{template.name}"
        where = row.span("job")
        if key in seen:
            diags.append(Diagnostic(wl.DUPLICATE_JOB, f"job {key} is defined twice", where, help="give each job its "
                                    "own name", related=((seen[key], "first here"),)))
            continue
        seen[key] = where
        templates.append(template)
    over = wl.pods_over_limit(tuple(templates))
    if over is not None:
        template, total = over
        diags.append(Diagnostic(wl.BAD_VALUE, f"pods: the rows up to job {template.namespace}/{template.name} add "
                                              f"up to {total} pods, more than the {wl.MAX_WORKLOAD_PODS} a "
                                              "workload may create", template.spans.get("pods"),
                                help=f"the pods of all rows add up to at most {wl.MAX_WORKLOAD_PODS}"))
    if diags:
        raise PolicyError(diags)
    return wl.Workload(name=Path(name).stem, templates=tuple(templates), file=name)


class _Row:
    def __init__(self, file: str, line: int, fields: list[str], offsets: list[int], index: dict[str, int],
                 diags: list[Diagnostic]):
        self.file, self.line, self.fields, self.offsets = file, line, fields, offsets
        self.index, self.diags = index, diags

    def span(self, column: str) -> Span:
        i = self.index[column]
        col = self.offsets[i] if i < len(self.offsets) else 1
        return Span(self.file, self.line, col, self.line, col + max(len(self.fields[i]), 1) - 1)

    def value(self, column: str) -> str:
        return self.fields[self.index[column]].strip()

    def template(self) -> wl.JobTemplate | None:
        before = len(self.diags)
        job = self.value("job")
        namespace, _, name = job.rpartition("/")
        if not name or not wl.DNS_NAME.match(name) or (namespace and not wl.DNS_NAME.match(namespace)):
            self._error(wl.BAD_VALUE, "job", f"'{job}' is not a job name", "write name or namespace/name in "
                        "lowercase letters, digits and '-'")
        queue = self.value("queue") or "default"
        submit = self._duration("submit_time")
        duration = self._duration("duration")
        pods = self._count("pods", minimum=1, maximum=wl.MAX_JOB_PODS)
        gpus = self._count("gpu", minimum=0)
        requests: dict[str, int] = {}
        for column, resource in (("cpu", "cpu"), ("memory", "memory")):
            text = self.value(column)
            if not text:
                continue
            try:
                requests[resource] = quantity.parse_quantity(text, resource)
            except ValueError as exc:
                self._error(wl.BAD_QUANTITY, column, f"{column}: {exc}", "quantities look like 500m, 2, 1.5Gi, 1e3")
                continue
            problem = fields.too_large(text, requests[resource], resource)
            if problem is not None:
                self._error(wl.BAD_QUANTITY, column, f"{column}: {problem}", fields.TOO_LARGE_HELP)
        if gpus:
            requests[GPU] = gpus * 1000
            problem = fields.too_large(str(gpus), requests[GPU], GPU)
            if problem is not None:
                self._error(wl.BAD_QUANTITY, "gpu", f"gpu: {problem}", fields.TOO_LARGE_HELP)
        priority_text = self.value("priority")
        priority: str | int | None = None
        if priority_text:
            priority = int(priority_text) if priority_text.lstrip("-").isdigit() else priority_text
        if len(self.diags) != before:
            return None
        return wl.JobTemplate(name=name, requests=wl.pod_request(requests), duration=(duration, duration),
                              namespace=namespace or wl.DEFAULT_NAMESPACE, queue=queue, at=submit, pods=pods,
                              min_available=pods, priority=priority,
                              spans={"queue": self.span("queue"), "priority": self.span("priority"),
                                     "name": self.span("job"), "pods": self.span("pods")})

    def _duration(self, column: str) -> float:
        try:
            return wl.parse_duration(self.value(column))
        except ValueError as exc:
            self._error(wl.BAD_DURATION, column, f"{column}: {exc}", "write seconds, or a duration such as 90s, 2h")
            return 0.0

    def _count(self, column: str, *, minimum: int, maximum: int | None = None) -> int:
        text = self.value(column) or "0"
        if not text.isdigit() or int(text) < minimum:
            self._error(wl.BAD_VALUE, column, f"{column}: '{text}' is not a whole number >= {minimum}",
                        f"write a whole number >= {minimum}")
            return minimum
        if maximum is not None and int(text) > maximum:
            self._error(wl.BAD_VALUE, column, f"{column}: must be at most {maximum}, got {text}", vcjob.MAX_PODS_HELP)
            return minimum
        return int(text)

    def _error(self, code: str, column: str, message: str, help: str) -> None:
        self.diags.append(Diagnostic(code, message, self.span(column), help=help))


def _columns(line: str) -> list[int]:
    """1-based column where each comma-separated field starts (quotes are not interpreted)."""
    out, col = [1], 1
    for char in line:
        col += 1
        if char == ",":
            out.append(col)
    return out


def _span(file: str, line: int, offsets: list[int], i: int, fields: list[str]) -> Span:
    col = offsets[i] if i < len(offsets) else 1
    return Span(file, line, col, line, col + max(len(fields[i]), 1) - 1)
