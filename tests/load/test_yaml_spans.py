"""YAML and JSON read with positions: spans for keys, values and items; syntax errors located."""
from __future__ import annotations

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load import yaml_spans
from vpolicy.source import Span, snippet

TEXT = """\
kind: Pod
metadata:
  name: "web-0"   # quoted
  labels: {app: web, tier: 'front'}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: 1.50, memory: 1e3}}
  - name: d
  empty:
"""


def parsed() -> yaml_spans.YamlFile:
    return yaml_spans.parse_yaml(TEXT, name="pod.yaml")


def test_key_and_value_spans_are_one_based_and_cover_the_token() -> None:
    doc = parsed().documents[0]
    file = parsed()
    assert file.key_span(doc, "kind") == Span("pod.yaml", 1, 1, 1, 4)
    assert file.value_span(doc, "kind") == Span("pod.yaml", 1, 7, 1, 9)
    assert file.value_span(doc["metadata"], "name") == Span("pod.yaml", 3, 9, 3, 15)


def test_flow_mapping_values_stop_at_commas_and_braces() -> None:
    file = parsed()
    labels = file.documents[0]["metadata"]["labels"]
    assert file.value_span(labels, "app") == Span("pod.yaml", 4, 17, 4, 19)
    assert file.value_span(labels, "tier") == Span("pod.yaml", 4, 28, 4, 34)


def test_item_spans_point_at_each_list_entry() -> None:
    file = parsed()
    containers = file.documents[0]["spec"]["containers"]
    assert file.item_span(containers, 1) == Span("pod.yaml", 9, 5, 9, 8)


def test_a_null_value_is_located_at_its_key() -> None:
    file = parsed()
    spec = file.documents[0]["spec"]
    assert file.value_span(spec, "empty") == Span("pod.yaml", 10, 3, 10, 7)


def test_value_text_keeps_numbers_as_written() -> None:
    file = parsed()
    requests = file.documents[0]["spec"]["containers"][0]["resources"]["requests"]
    assert file.value_text(requests, "cpu") == "1.50"
    assert file.value_text(requests, "memory") == "1e3"


def test_a_key_merged_in_from_an_anchor_is_located_at_the_mapping_that_merges_it() -> None:
    file = yaml_spans.parse_yaml("base: &b {duration: 1.5}\njob:\n  <<: *b\n  name: x\n", name="w.yaml")
    job = file.documents[0]["job"]
    assert (str(file.key_span(job, "duration")), str(file.value_span(job, "duration")),
            file.value_text(job, "duration")) == ("w.yaml:3:3", "w.yaml:3:3", "1.5")


def test_parsed_text_is_remembered_so_snippets_render() -> None:
    file = parsed()
    span = file.value_span(file.documents[0]["metadata"], "name")
    assert snippet(span) == '    3 |   name: "web-0"   # quoted\n      |         ^^^^^^^'


def test_documents_of_a_multi_document_stream_are_kept_in_order() -> None:
    file = yaml_spans.parse_yaml("a: 1\n---\n---\n- x\n--- 5\n", name="multi.yaml")
    assert [type(d).__name__ for d in file.documents] == ["CommentedMap", "NoneType", "CommentedSeq", "int"]
    assert file.document_span(3) == Span("multi.yaml", 5, 5, 5, 5)


def test_json_with_tab_indentation_is_read() -> None:
    file = yaml_spans.parse_yaml('{\n\t"kind": "Node",\n\t"metadata": {"name": "n1"}\n}\n', name="n.json")
    doc = file.documents[0]
    assert doc["metadata"]["name"] == "n1"
    assert file.value_span(doc["metadata"], "name") == Span("n.json", 3, 23, 3, 26)


@pytest.mark.parametrize("text, name, line, col, message, help", [
    pytest.param("a: b: c\n", "x.yaml", 1, 5, "invalid YAML: mapping values are not allowed here",
                 "a plain value may not contain ': '; quote it, or fix this line's indentation", id="colon-in-value"),
    pytest.param("a: 1\n\tb: 2\n", "x.yaml", 2, 1,
                 "invalid YAML: found character '\\t' that cannot start any token",
                 "indent with spaces: YAML does not allow tabs for indentation", id="tab-indent"),
    pytest.param("a: [1, 2\nb: 3\n", "x.yaml", 2, 2,
                 "invalid YAML: expected ',' or ']', but got ':' (while parsing a flow sequence at line 1, column 4)",
                 "a flow list or mapping is not closed, or two of its items lack a comma between them",
                 id="unclosed-flow-list"),
    pytest.param("a: 'open\n", "x.yaml", 2, 1,
                 "invalid YAML: found unexpected end of stream (while scanning a quoted scalar at line 1, column 4)",
                 "a quote, bracket or brace opened earlier is never closed", id="unclosed-quote"),
    pytest.param("a:\n  - x\n - y\n", "x.yaml", 3, 2,
                 "invalid YAML: expected <block end>, but found '<block sequence start>' "
                 "(while parsing a block mapping at line 1, column 1)",
                 "this line is indented differently from the lines it belongs with", id="misindented-item"),
    pytest.param("a: *nope\n", "x.yaml", 1, 4, "invalid YAML: found undefined alias 'nope'",
                 "define the &anchor before the *alias that uses it", id="undefined-alias"),
    pytest.param('{"kind": "Node",}\n{', "x.json", 2, 1,
                 "invalid JSON: expected '<document start>', but found '{'",
                 "fix the syntax at this position; `kubectl ... -o yaml` output always parses", id="json"),
])
def test_malformed_input_is_one_located_yaml_syntax_diagnostic(
        text: str, name: str, line: int, col: int, message: str, help: str) -> None:
    with pytest.raises(PolicyError) as caught:
        yaml_spans.parse_yaml(text, name=name)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "load.yaml-syntax"
    assert diagnostic.span is not None
    assert (diagnostic.span.file, diagnostic.span.line, diagnostic.span.col) == (name, line, col)
    assert diagnostic.message == message
    assert diagnostic.help == help


def test_a_duplicate_key_names_the_key_and_the_mapping_it_repeats_in() -> None:
    with pytest.raises(PolicyError) as caught:
        yaml_spans.parse_yaml("metadata:\n  name: a\n  name: b\n", name="d.yaml")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.one_line() == ('d.yaml:3:3: error[load.duplicate-key]: duplicate key "name" '
                                     "(a key may appear once per mapping; delete or merge the repeated one)")
    assert diagnostic.related == ((Span("d.yaml", 2, 3, 2, 6), "in this mapping"),)


def test_the_stage_prefixes_the_codes_for_other_yaml_inputs() -> None:
    with pytest.raises(PolicyError) as caught:
        yaml_spans.parse_yaml("a: b: c\n", name="s.yaml", stage="scenario")
    assert [d.code for d in caught.value.diagnostics] == ["scenario.yaml-syntax"]


def test_a_missing_file_is_an_unreadable_file_diagnostic(tmp_path: object) -> None:
    with pytest.raises(PolicyError) as caught:
        yaml_spans.read_yaml("/nonexistent/dump.yaml")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.message) == ("load.unreadable-file", "no such file: /nonexistent/dump.yaml")
