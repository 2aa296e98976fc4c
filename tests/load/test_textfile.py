"""A file the user names that cannot be read as UTF-8 text is one located problem, never a bare exception."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load import conf, textfile, yaml_spans


def unreadable(path: str, *, bom: bool = False) -> textfile.UnreadableFile:
    with pytest.raises(textfile.UnreadableFile) as caught:
        textfile.read_text(path, bom=bom)
    return caught.value


def test_text_that_is_not_utf8_is_blamed_at_its_first_bad_byte_counted_in_characters(tmp_path: Path) -> None:
    path = tmp_path / "latin1.vpol"
    path.write_bytes('plugin p\nlet é = "caf'.encode("utf-8") + b'\xe9"\n')
    problem = unreadable(str(path))
    assert (problem.span.line, problem.span.col, problem.reason, problem.not_utf8, problem.missing) == (
        2, 13, "not UTF-8 text (byte 0xe9: invalid continuation byte)", True, False)


def test_the_diagnostic_quotes_the_line_without_reading_the_file_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("p.vpol").write_bytes(b'plugin p\nlet a = "\xe9"\n')
    diagnostic = unreadable("p.vpol").diagnostic("input.unreadable", help="policy files are UTF-8 text")
    assert diagnostic.render() == (
        "p.vpol:2:10: error[input.unreadable]: cannot read p.vpol: not UTF-8 text (byte 0xe9: invalid "
        "continuation byte)\n"
        '    2 | let a = "\ufffd"\n'
        "      |          ^\n"
        "   help: policy files are UTF-8 text")


def test_a_byte_order_mark_is_dropped_only_when_asked_and_columns_count_after_it(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_bytes(b"\xef\xbb\xbfa: 1\n")
    bad.write_bytes(b"\xef\xbb\xbfa: \xff\n")
    assert textfile.read_text(good, bom=True) == "a: 1\n"
    assert textfile.read_text(good) == "\ufeffa: 1\n"
    assert unreadable(str(bad), bom=True).span.col == 4


def test_a_missing_file_is_blamed_at_its_first_line(tmp_path: Path) -> None:
    problem = unreadable(str(tmp_path / "x.vpol"))
    assert (str(problem.span), problem.reason, problem.missing) == (
        f"{tmp_path}/x.vpol:1:1", "No such file or directory", True)


def test_a_folder_is_blamed_at_its_first_line(tmp_path: Path) -> None:
    problem = unreadable(str(tmp_path))
    assert (str(problem.span), problem.reason, problem.missing) == (f"{tmp_path}:1:1", "Is a directory", False)


def test_the_cluster_and_conf_loaders_point_at_the_bad_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("c.yaml").write_bytes(b"kind: Node\n# caf\xe9\n")
    Path("s.conf").write_bytes(b"actions: allocate\n# caf\xe9\n")
    with pytest.raises(PolicyError) as dump:
        yaml_spans.read_yaml("c.yaml")
    with pytest.raises(PolicyError) as conf_file:
        conf.load_conf("s.conf")
    assert [d.one_line() for d in (*dump.value.diagnostics, *conf_file.value.diagnostics)] == [
        "c.yaml:2:6: error[load.unreadable-file]: cannot read c.yaml: not UTF-8 text (byte 0xe9: invalid "
        "continuation byte) (cluster dumps must be UTF-8 text files)",
        "s.conf:2:6: error[conf.unreadable]: cannot read the scheduler conf: not UTF-8 text (byte 0xe9: invalid "
        "continuation byte) (give the path of a readable UTF-8 YAML file)",
    ]
