"""A conf inside a ConfigMap (a file, or a cluster dump) reports positions in the file that holds it."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load import conf as loader
from vpolicy.source import Span, snippet

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-configmap
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false
    configurations:
    - name: allocate
      arguments: {predicateErrorCacheEnable: false}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as caught:
        loader.load_conf(path)
    return caught.value


def test_a_configmap_file_yields_the_conf_it_holds(tmp_path: Path) -> None:
    conf = loader.load_conf(write(tmp_path, "cm.yaml", CONFIGMAP))
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert [p.name for p in conf.plugins()] == ["priority", "gang"]
    assert conf.action_arguments("allocate") == {"predicateErrorCacheEnable": False}
    gang = conf.plugin("gang")
    assert gang is not None and gang.span is not None
    assert (gang.span.line, gang.span.col) == (12, 15)


def test_an_error_in_a_configmap_points_into_the_file_with_a_snippet(tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", CONFIGMAP.replace("name: gang", "name: gangg"))
    (d,) = error_of(path).diagnostics
    assert (d.code, d.span and d.span.line, d.span and d.span.col) == ("conf.unknown-plugin", 12, 15)
    assert d.span is not None
    assert snippet(d.span) == "   12 |       - name: gangg\n      |               ^^^^^"


def test_a_syntax_error_in_a_configmap_points_into_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", CONFIGMAP.replace("    tiers:\n", "    tiers: [\n"))
    (d,) = error_of(path).diagnostics
    assert d.code == "conf.yaml-syntax"
    assert d.span is not None and d.span.line == 10


def test_an_explicit_indentation_indicator_is_honoured(tmp_path: Path) -> None:
    text = ("kind: ConfigMap\n"
            "data:\n"
            "  volcano-scheduler.conf: |2-\n"
            "      # the first line is indented more than the block\n"
            "    actions: allocate\n"
            "    tiers: [{plugins: [{name: gangg}]}]\n")
    assert loader.literal_block_offsets(text, line=3, col=27, key_col=3) == (3, 4)
    (d,) = error_of(write(tmp_path, "cm.yaml", text)).diagnostics
    assert d.span is not None and (d.span.line, d.span.col) == (6, 31)


def test_a_configmap_conf_written_as_a_quoted_string_points_at_the_string(tmp_path: Path) -> None:
    text = ("kind: ConfigMap\ndata:\n"
            '  volcano-scheduler.conf: "actions: allocate\\ntiers:\\n- plugins:\\n  - name: gangg\\n"\n')
    (d,) = error_of(write(tmp_path, "cm.yaml", text)).diagnostics
    assert (d.code, d.message) == ("conf.unknown-plugin", "unknown plugin 'gangg'")
    assert d.span is not None and (d.span.line, d.span.col) == (3, 27)


def test_a_configmap_without_the_conf_key_is_an_error(tmp_path: Path) -> None:
    text = "kind: ConfigMap\nmetadata: {name: x}\ndata:\n  scheduler.conf: |\n    actions: allocate\n"
    (d,) = error_of(write(tmp_path, "cm.yaml", text)).diagnostics
    assert (d.code, str(d.span), d.message, d.help) == (
        "conf.missing-key", f"{tmp_path / 'cm.yaml'}:3:1", "the ConfigMap has no data key 'volcano-scheduler.conf'",
        "put the conf under data.volcano-scheduler.conf (found 'scheduler.conf')")


def test_the_configmap_holding_the_conf_is_found_among_other_documents(tmp_path: Path) -> None:
    text = "kind: ConfigMap\ndata: {other: x}\n---\n" + CONFIGMAP
    conf = loader.load_conf(write(tmp_path, "cms.yaml", text))
    gang = conf.plugin("gang")
    assert gang is not None and gang.span is not None and gang.span.line == 15


def test_a_plain_conf_file_with_several_documents_is_an_error(tmp_path: Path) -> None:
    (d,) = error_of(write(tmp_path, "two.conf", "actions: allocate\n---\nactions: enqueue\n")).diagnostics
    assert (d.code, d.span and d.span.line, d.message) == (
        "conf.wrong-type", 3, "a scheduler conf is one YAML document, this text has several")


def test_a_missing_file_is_a_policy_error_not_a_traceback(tmp_path: Path) -> None:
    (d,) = error_of(tmp_path / "absent.conf").diagnostics
    assert (d.code, d.message) == ("conf.unreadable", "cannot read the scheduler conf: No such file or directory")


@pytest.mark.parametrize("line_offset, col_offset, expected", [
    pytest.param(0, 0, "dump.yaml:4:11", id="no-offset"),
    pytest.param(20, 4, "dump.yaml:24:15", id="embedded"),
])
def test_offsets_map_positions_into_the_enclosing_file(line_offset: int, col_offset: int, expected: str) -> None:
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: gangg\n"
    with pytest.raises(PolicyError) as caught:
        loader.parse_conf_text(text, file="dump.yaml", line_offset=line_offset, col_offset=col_offset)
    (d,) = caught.value.diagnostics
    assert str(d.span) == expected


def test_offsets_apply_to_syntax_errors_too() -> None:
    with pytest.raises(PolicyError) as caught:
        loader.parse_conf_text("actions: [allocate\n", file="dump.yaml", line_offset=10, col_offset=6)
    (d,) = caught.value.diagnostics
    assert (d.code, str(d.span)) == ("conf.yaml-syntax", "dump.yaml:12:7")


def test_literal_block_offsets_locate_the_conf_inside_a_dump() -> None:
    # the `|` of CONFIGMAP sits on line 7, column 27; its key starts at column 3
    assert loader.literal_block_offsets(CONFIGMAP, line=7, col=27, key_col=3) == (7, 4)
    assert loader.literal_block_offsets(CONFIGMAP, line=4, col=9, key_col=3) is None


def test_a_configmap_conf_that_is_not_a_string_is_a_type_error(tmp_path: Path) -> None:
    text = "kind: ConfigMap\ndata:\n  volcano-scheduler.conf:\n    actions: allocate\n"
    (d,) = error_of(write(tmp_path, "cm.yaml", text)).diagnostics
    assert (d.code, d.span and d.span.line, d.span and d.span.col, d.message, d.help) == (
        "conf.wrong-type", 4, 5, "'volcano-scheduler.conf' must be the conf as a string, not a mapping",
        "write the conf as a literal block: 'volcano-scheduler.conf: |'")


def test_an_origin_takes_every_diagnostic_of_an_unmappable_embedded_conf() -> None:
    origin = Span("dump.yaml", 40, 27, 40, 60)
    with pytest.raises(PolicyError) as caught:
        loader.parse_conf_text("actions: alocate, backfil\n", file="dump.yaml", origin=origin)
    assert [(d.code, d.span) for d in caught.value.diagnostics] == [
        ("conf.unknown-action", origin), ("conf.unknown-action", origin)]
