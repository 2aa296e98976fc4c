"""Big dumps take the fast path (C parsers, declared shapes); it must read exactly what the exact path reads.

The whole tests/load suite also passes with every input forced onto the fast path
(`VPOLICY_FAST_PATH_BYTES=0`), except duplicate keys, which only the exact path reports (docs in
`vpolicy.load.dumpfile`); these tests pin the agreement on realistic, noisy objects and the input forms.
"""
from __future__ import annotations

import gzip
import io
import json
import mmap
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import dumps as bench_dumps
from benchmarks import generate as gen
from vpolicy.errors import PolicyError
from vpolicy.load import cluster, dumpfile
from vpolicy.model import snapshot


def _realistic(size: gen.Size) -> dict[str, Any]:
    generated = gen.generate(size, "steady", seed=3)
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": list(bench_dumps.realistic_objects(generated, seed=3))}


@pytest.fixture(scope="module")
def small_cluster() -> dict[str, Any]:
    return _realistic(gen.Size("T", 4, 16))


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def _same(a: snapshot.ClusterSnapshot, b: snapshot.ClusterSnapshot) -> None:
    assert a == b  # origins are left out of equality; every scheduling field is in it
    assert [str(p.origin) for p in a.pods] == [str(p.origin) for p in b.pods]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_the_fast_path_reads_a_noisy_dump_as_the_exact_path_does(
        tmp_path: Path, small_cluster: dict[str, Any], fmt: str) -> None:
    text = bench_dumps.to_yaml(small_cluster) if fmt == "yaml" else json.dumps(small_cluster, indent=4)
    path = _write(tmp_path, f"dump.{fmt}", text)
    exact = cluster.load_cluster(path, fast=False)
    fast = cluster.load_cluster(path, fast=True)
    assert len(exact.pods) > 16 and exact.podgroups and exact.queues
    _same(exact, fast)


def test_every_input_form_gives_the_same_snapshot(
        tmp_path: Path, small_cluster: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    yaml_text = bench_dumps.to_yaml(small_cluster)
    json_text = json.dumps(small_cluster, indent=4)
    reference = cluster.load_cluster(_write(tmp_path, "dump.yaml", yaml_text), fast=True)
    forms: dict[str, snapshot.ClusterSnapshot] = {}
    forms["json"] = cluster.load_cluster(_write(tmp_path, "dump.json", json_text), fast=True)
    gz = tmp_path / "dump.json.gz"
    gz.write_bytes(gzip.compress(json_text.encode()))
    forms["json.gz"] = cluster.load_cluster(str(gz))
    gz_yaml = tmp_path / "dump.yaml.gz"
    gz_yaml.write_bytes(gzip.compress(yaml_text.encode()))
    forms["yaml.gz"] = cluster.load_cluster(str(gz_yaml), fast=True)
    # Multi-document YAML, one object per document, in a folder split across two files.
    items = small_cluster["items"]
    half = len(items) // 2
    for name, part in (("a.yaml", items[:half]), ("b.yml", items[half:])):
        _write(tmp_path, f"folder/{name}", "".join("---\n" + bench_dumps.to_yaml(o) for o in part))
    forms["folder"] = cluster.load_cluster(str(tmp_path / "folder"), fast=True)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json_text.encode())))
    forms["stdin"] = cluster.load_cluster("-")
    for name, snap in forms.items():
        assert snap == reference, name


def test_a_cluster_info_dump_folder_reads_its_namespace_folders(tmp_path: Path, small_cluster: dict[str, Any]) -> None:
    items = small_cluster["items"]
    nodes = [o for o in items if o["kind"] == "Node"]
    by_namespace: dict[str, list[Any]] = {}
    for obj in items:
        if obj["kind"] == "Pod":
            by_namespace.setdefault(obj["metadata"]["namespace"], []).append(obj)
    _write(tmp_path, "dump/nodes.json", json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": nodes}))
    for namespace, pods in by_namespace.items():
        _write(tmp_path, f"dump/{namespace}/pods.json", json.dumps({"kind": "PodList", "items": pods}))
        _write(tmp_path, f"dump/{namespace}/services.json", json.dumps({"kind": "ServiceList", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}"}} for i in range(3)]}))
        _write(tmp_path, f"dump/{namespace}/{pods[0]['metadata']['name']}/logs.txt", "log line\n")
    snap = cluster.load_cluster(str(tmp_path / "dump"))
    assert len(snap.nodes) == len(nodes)
    assert len(snap.pods) == sum(len(p) for p in by_namespace.values())
    ignored = [w for w in snap.warnings if "Service" in w]
    assert len(ignored) == 1 and f"({3 * len(by_namespace)} objects, not used for scheduling)" in ignored[0]


def test_a_malformed_object_deep_in_a_big_dump_is_located_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "Big" is whatever takes the fast path; the threshold is lowered so that the exact path, which the
    # fast path's report is compared with, reads the same dump in seconds (ruamel reads about 1 MB/s).
    monkeypatch.setattr(dumpfile, "FAST_PATH_BYTES", 64 * 1024)
    big = _realistic(gen.Size("T", 6, 40))
    victim = [o for o in big["items"] if o["kind"] == "Pod"][-7]
    victim["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2x"
    for fmt in ("yaml", "json"):
        text = bench_dumps.to_yaml(big) if fmt == "yaml" else json.dumps(big, indent=4)
        path = _write(tmp_path, f"big.{fmt}", text)
        assert len(text) > dumpfile.FAST_PATH_BYTES  # the fast path, by size
        with pytest.raises(PolicyError) as fast:
            cluster.load_cluster(path)
        with pytest.raises(PolicyError) as exact:
            cluster.load_cluster(path, fast=False)
        (found,) = fast.value.diagnostics
        assert found.code == "load.bad-quantity"
        assert [d.render() for d in fast.value.diagnostics] == [d.render() for d in exact.value.diagnostics]
        assert found.span is not None
        line = text.splitlines()[found.span.line - 1]
        assert line[found.span.col - 1:].startswith('"2x"')  # (the YAML writer quotes it too)


def test_a_mapped_dump_with_text_beyond_ascii_reads_and_locates_as_the_exact_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A big file is mapped into memory, not read (its pages handed back as objects are read): the same
    # snapshot, and a mistake after multi-byte characters located by character, as the exact path does.
    monkeypatch.setattr(dumpfile, "FAST_PATH_BYTES", 64 * 1024)
    monkeypatch.setattr(dumpfile, "_RELEASE_EVERY", 3)
    monkeypatch.setattr(dumpfile, "_RELEASE_CHUNKS", 1)
    monkeypatch.setattr(dumpfile, "_CHUNK_BYTES", 4096)
    big = _realistic(gen.Size("T", 6, 40))
    pods = [o for o in big["items"] if o["kind"] == "Pod"]
    for pod in pods:
        pod["metadata"]["labels"]["team"] = "équipe-données-日本"

    def written(fmt: str) -> str:  # the YAML writer escapes what is not ASCII: unescaped here, still valid
        if fmt == "json":
            return json.dumps(big, indent=4, ensure_ascii=False)
        text = bench_dumps.to_yaml(big)
        for value in ("équipe-données-日本", "1Gé"):
            text = text.replace(json.dumps(value), json.dumps(value, ensure_ascii=False))
        return text

    for fmt in ("yaml", "json"):
        text = written(fmt)
        assert not text.isascii()
        path = _write(tmp_path, f"mapped.{fmt}", text)
        assert isinstance(dumpfile.read_input(path)[1], mmap.mmap)
        _same(cluster.load_cluster(path, fast=False), cluster.load_cluster(path))
    pods[-3]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gé"
    for fmt in ("yaml", "json"):
        text = written(fmt)
        path = _write(tmp_path, f"mapped-bad.{fmt}", text)
        with pytest.raises(PolicyError) as fast:
            cluster.load_cluster(path)
        with pytest.raises(PolicyError) as exact:
            cluster.load_cluster(path, fast=False)
        assert [d.render() for d in fast.value.diagnostics] == [d.render() for d in exact.value.diagnostics]
        (found,) = fast.value.diagnostics
        assert found.span is not None
        assert text.splitlines()[found.span.line - 1][found.span.col - 1:].startswith('"1Gé"')


def test_a_json_syntax_error_in_a_big_dump_is_located(tmp_path: Path, small_cluster: dict[str, Any]) -> None:
    text = json.dumps(small_cluster, indent=4)
    cut = text.index('"kind": "Pod"', len(text) // 2)
    broken = text[:cut] + '"kind" "Pod"' + text[cut + len('"kind": "Pod"'):]
    path = _write(tmp_path, "broken.json", broken)
    with pytest.raises(PolicyError) as caught:
        cluster.load_cluster(path, fast=True)
    (found,) = caught.value.diagnostics
    assert found.code == "load.yaml-syntax" and found.span is not None
    assert found.span.line == broken[:cut].count("\n") + 1


@pytest.mark.parametrize("layout", ["dashes-at-the-key", "dashes-indented"])
def test_a_yaml_list_is_cut_into_items_only_where_its_items_start(tmp_path: Path, layout: str) -> None:
    pad = "" if layout == "dashes-at-the-key" else "  "
    items = "".join(f"{pad}- apiVersion: v1\n{pad}  kind: Namespace\n{pad}  metadata:\n{pad}    name: ns{i}\n"
                    f"{pad}    labels:\n{pad}      note: |\n{pad}        - not an item\n{pad}        ---\n"
                    for i in range(3))
    text = f"apiVersion: v1\nitems:\n{items}kind: List\nmetadata:\n  finalizers:\n  - x\n---\n" \
           "apiVersion: v1\nkind: Namespace\nmetadata: {name: last}\n"
    path = _write(tmp_path, "list.yaml", text)
    fast = cluster.load_cluster(path, fast=True)
    assert fast.namespaces == ("ns0", "ns1", "ns2", "last")
    assert fast == cluster.load_cluster(path, fast=False)


@pytest.mark.parametrize("pad", [pytest.param("", id="dashes-at-the-key"), pytest.param("  ", id="dashes-indented")])
def test_a_yaml_list_item_whose_dash_ends_its_line_and_comments_between_items_are_cut_as_written(
        tmp_path: Path, pad: str) -> None:
    def items(first: str, second: str) -> str:
        return "".join(f"{pad}-\n{pad}  apiVersion: v1\n{pad}  kind: Namespace\n{pad}  metadata: {{name: {first}{i}}}\n"
                       f"# a comment at the first column\n{pad}- apiVersion: v1\n{pad}  kind: Namespace\n"
                       f"{pad}  metadata:\n{pad}    name: {second}{i}\n" for i in range(2))

    text = f"apiVersion: v1\nitems:\n{items('a', 'b')}kind: List\n---\napiVersion: v1\nitems:\n" \
           f"{items('c', 'd')}kind: List\n"
    path = _write(tmp_path, "list.yaml", text)
    fast = cluster.load_cluster(path, fast=True)
    assert fast.namespaces == ("a0", "b0", "a1", "b1", "c0", "d0", "c1", "d1")
    assert fast == cluster.load_cluster(path, fast=False)


def test_yaml_chunks_read_one_after_another_each_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rapidyaml's tree and the JSON buffer are kept from chunk to chunk: a chunk after a bigger one, after one
    whose JSON outgrows the buffer (aliases written once, expanded three times), and after one rapidyaml
    refuses, is read as if it were the first."""
    monkeypatch.setattr(dumpfile, "_CHUNK_BYTES", 1)  # every item a chunk of its own
    labels = ", ".join(f"k{i}: v" for i in range(800))
    items = [
        "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: small}\n",
        "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: wide\n    labels: &l {" + labels + "}\n"
        "    annotations: *l\n  spec:\n    nodeSelector: *l\n    containers: [{name: main}]\n",
        "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: after-wide}\n",
        "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: refused, labels: {a: [b}}\n",
        "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: after-refused}\n",
    ]
    path = _write(tmp_path, "chunks.yaml", "apiVersion: v1\nkind: List\nitems:\n" + "".join(items))
    with pytest.raises(PolicyError) as fast_error:
        cluster.load_cluster(path, fast=True)
    with pytest.raises(PolicyError) as exact_error:
        cluster.load_cluster(path, fast=False)
    assert str(fast_error.value) == str(exact_error.value)  # the refused item, located alike
    items[3] = "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: fixed}\n"
    _write(tmp_path, "chunks.yaml", "apiVersion: v1\nkind: List\nitems:\n" + "".join(items))
    fast = cluster.load_cluster(path, fast=True)
    assert fast.namespaces == ("small", "after-wide", "fixed", "after-refused")
    assert dict(fast.pods[0].node_selector) == dict(fast.pods[0].labels) == {f"k{i}": "v" for i in range(800)}
    _same(fast, cluster.load_cluster(path, fast=False))


def test_the_example_cluster_reads_the_same_on_both_paths() -> None:
    """The shipped example has vcjobs, affinity, taints, priorities and a conf ConfigMap: every field the
    readers use must be in the fast path's shapes."""
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
    exact = cluster.load_cluster(example, fast=False)
    fast = cluster.load_cluster(example, fast=True)
    _same(exact, fast)
    assert (fast.conf_text, fast.conf_line_offset) == (exact.conf_text, exact.conf_line_offset)
    assert fast.warnings == exact.warnings
