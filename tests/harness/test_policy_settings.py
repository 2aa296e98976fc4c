"""What a conf's plugin `arguments` or a policy's `use` settings give a rule module is checked where the
user wrote it: an argument of the wrong type at its value (a note at the module's `param` or its
`argument(...)` call), in a `use` an unknown flag or argument at its key, and a `use` of a policy at the
`use`. Files are written into a temporary cwd so that spans read as the user sees them."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.harness import policy as policies
from vpolicy.load import conf as conf_loader
from vpolicy.source import Span

ROOT = Path(__file__).resolve().parents[2]
Found = tuple[str, str, str | None, tuple[tuple[str, str], ...]]  # where, code + message, help, notes


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _module_span(path: str, line: int, col: int) -> str:
    """A span in a shipped module, written as from the checkout (see `_shown`)."""
    return str(Span(f"policies/{path}", line, col))


def _shown(span: Span | None) -> str:
    """A span as text, with the shipped `policies/` folder (absolute from the temporary cwd) as `policies`."""
    return str(span).replace(str(policies.policy_root()), "policies")


def _found(error: PolicyError) -> list[Found]:
    return [(_shown(d.span), f"{d.code}: {d.message}", d.help, tuple((_shown(s), note) for s, note in d.related))
            for d in error.diagnostics]


def _conf_problems(plugins: str) -> list[Found]:
    Path("c.conf").write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n'
                              + textwrap.indent(textwrap.dedent(plugins).strip("\n"), "  ") + "\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        policies.from_conf(conf_loader.load_conf("c.conf"))
    return _found(caught.value)


def _policy_problems(uses: str) -> list[Found]:
    Path("p.vpol").write_text("policy p\ntier {\n" + textwrap.indent(textwrap.dedent(uses).strip("\n"), "  ")
                              + "\n}\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        policies.from_policy_file("p.vpol")
    return _found(caught.value)


NODEORDER_WEIGHT = ("parameter 'least_requested_weight' of plugin 'nodeorder' (number) is declared here")
BINPACK_WEIGHT = "parameter 'weight' of plugin 'binpack' (number) is declared here"
BINPACK_RESOURCES = "parameter 'extra_resources' of plugin 'binpack' (string) is declared here"
READS_A_NUMBER = "plugin 'binpack' reads it here, as a number"


@pytest.mark.parametrize("plugins, expected", [
    pytest.param("""
        - name: nodeorder
          arguments: {leastrequested.weight: abc}
        """, ("c.conf:5:40", "compile.bad-argument: argument 'leastrequested.weight' of plugin 'nodeorder' must be "
              "number, got 'abc'", "give 'leastrequested.weight' a number value",
              ((_module_span("volcano/nodeorder.vpol", 3, 1), NODEORDER_WEIGHT),)),
        id="a-word-for-a-number-parameter"),
    pytest.param("""
        - name: binpack
          arguments:
            binpack.resources: [1, 2]
        """, ("c.conf:6:26", "compile.bad-argument: argument 'binpack.resources' of plugin 'binpack' must be "
              "string, got [1, 2]", "give 'binpack.resources' a string value",
              ((_module_span("volcano/binpack.vpol", 6, 1), BINPACK_RESOURCES),)),
        id="a-list-for-a-string-parameter"),
    pytest.param("""
        - name: binpack
          arguments:
            binpack.resources: nvidia.com/gpu
            binpack.resources.nvidia.com/gpu: abc
        """, ("c.conf:7:41", "compile.bad-argument: argument 'binpack.resources.nvidia.com/gpu' of plugin "
              "'binpack' must be number, got 'abc'", "give 'binpack.resources.nvidia.com/gpu' a number value",
              ((_module_span("volcano/binpack.vpol", 12, 54), READS_A_NUMBER),)),
        id="a-word-for-a-key-read-by-argument"),
    pytest.param("""
        - name: network-topology-aware
          arguments:
            hypernode.gradient.evict.max-hypernodes: 2.5
        """, ("c.conf:6:48", "compile.bad-argument: argument 'hypernode.gradient.evict.max-hypernodes' of plugin "
              "'network_topology_aware' must be int, got 2.5", "give 'hypernode.gradient.evict.max-hypernodes' a int "
              "value", ((_module_span("volcano/network-topology-aware.vpol", 13, 1),
                         "parameter 'evict_max_hypernodes' of plugin 'network_topology_aware' (int) is declared here"),)),
        id="a-fraction-for-the-eviction-domain-count"),
])
def test_a_conf_argument_of_the_wrong_type_is_reported_at_its_value(plugins: str, expected: Found) -> None:
    assert _conf_problems(plugins) == [expected]


@pytest.mark.parametrize("uses, expected", [
    pytest.param('use "volcano/binpack.vpol" {binpack.weight: "x"}',
                 ("p.vpol:3:47", "compile.bad-argument: argument 'binpack.weight' of plugin 'binpack' must be "
                  "number, got 'x'", "give 'binpack.weight' a number value",
                  ((_module_span("volcano/binpack.vpol", 3, 1), BINPACK_WEIGHT),)),
                 id="a-string-for-a-number-parameter"),
    pytest.param('use "volcano/binpack.vpol" {"binpack.resources": [1, 2]}',
                 ("p.vpol:3:52", "compile.bad-argument: argument 'binpack.resources' of plugin 'binpack' must be "
                  "string, got [1, 2]", "give 'binpack.resources' a string value",
                  ((_module_span("volcano/binpack.vpol", 6, 1), BINPACK_RESOURCES),)),
                 id="a-list-for-a-string-parameter"),
    pytest.param('use "volcano/binpack.vpol" {"binpack.resources.nvidia.com/gpu": "abc"}',
                 ("p.vpol:3:67", "compile.bad-argument: argument 'binpack.resources.nvidia.com/gpu' of plugin "
                  "'binpack' must be number, got 'abc'", "give 'binpack.resources.nvidia.com/gpu' a number value",
                  ((_module_span("volcano/binpack.vpol", 12, 54), READS_A_NUMBER),)),
                 id="a-string-for-a-key-read-by-argument"),
    pytest.param('use "volcano/binpack.vpol" {binpack.weight: 1e400}',
                 ("p.vpol:3:47", "compile.bad-argument: argument 'binpack.weight' of plugin 'binpack' must be "
                  "a finite number, got inf", "give 'binpack.weight' a number value",
                  ((_module_span("volcano/binpack.vpol", 3, 1), BINPACK_WEIGHT),)),
                 id="an-infinite-number"),
    pytest.param('use "volcano/gang.vpol" {enableBogus: true}',
                 ("p.vpol:3:28", "policy.unknown-flag: unknown option 'enableBogus' for plugin 'gang'",
                  "did you mean 'enableBestNode'?", ()), id="an-unknown-flag"),
    pytest.param('use "volcano/binpack.vpol" {bogus: 1}',
                 ("p.vpol:3:31", "policy.unknown-argument: plugin 'binpack' has no argument 'bogus'",
                  "its arguments are binpack.cpu, binpack.memory, binpack.resources, binpack.resources.<name>, "
                  "binpack.weight", ()), id="an-unknown-argument"),
    pytest.param('use "volcano/binpack.vpol" {binpack.wieght: 1}',
                 ("p.vpol:3:31", "policy.unknown-argument: plugin 'binpack' has no argument 'binpack.wieght'",
                  "did you mean 'binpack.weight'?", ()), id="a-misspelt-argument"),
    pytest.param('use "volcano/gang.vpol" {weight: 1}',
                 ("p.vpol:3:28", "policy.unknown-argument: plugin 'gang' has no argument 'weight'",
                  "it takes no arguments", ()), id="an-argument-for-a-module-without-any"),
    pytest.param('use "volcano/capacity.vpol" {enableHierarchy: 1}',
                 ("p.vpol:3:49", "policy.wrong-type: flag 'enableHierarchy' must be true or false", None, ()),
                 id="a-number-for-enable-hierarchy"),
    pytest.param('use "default.vpol"',
                 ("p.vpol:3:3", "policy.use-of-policy: 'default.vpol' is a policy ('policy default'), not a rule "
                  "module", "'use' takes rule modules (files that start with 'plugin NAME'); write the other "
                  "policy's 'use' lines here instead", ()), id="a-policy"),
    pytest.param('use "p.vpol"',
                 ("p.vpol:3:3", "policy.use-of-policy: 'p.vpol' is a policy ('policy p'), not a rule module",
                  "'use' takes rule modules (files that start with 'plugin NAME'); write the other policy's 'use' "
                  "lines here instead", ()), id="the-policy-itself"),
])
def test_a_use_setting_that_does_not_fit_the_module_is_reported_where_written(uses: str, expected: Found) -> None:
    assert _policy_problems(uses) == [expected]


def test_every_problem_of_a_policy_is_reported_at_once() -> None:
    found = _policy_problems('use "volcano/gang.vpol" {enableBogus: true}\nuse "volcano/binpack.vpol" {bogus: 1}')
    assert [(where, what.split(":")[0]) for where, what, _help, _notes in found] == [
        ("p.vpol:3:28", "policy.unknown-flag"), ("p.vpol:4:31", "policy.unknown-argument")]


def test_settings_that_fit_their_modules_compile() -> None:
    Path("p.vpol").write_text(textwrap.dedent("""\
        policy p
        tier {
          use "volcano/gang.vpol" {enablePreemptable: false}
          use "volcano/capacity.vpol" {enableHierarchy: true}
        }
        tier {
          use "volcano/binpack.vpol" {binpack.weight: 10, "binpack.resources": "nvidia.com/gpu",
                                      "binpack.resources.nvidia.com/gpu": 5, cpu_weight: 2, enableNodeOrder: true}
        }
        """), encoding="utf-8")
    policy = policies.from_policy_file("p.vpol")
    binpack = policy.tiers[1][0].module
    assert (binpack.params["weight"], binpack.params["extra_resources"], binpack.params["cpu_weight"]) == (
        10.0, "nvidia.com/gpu", 2.0)
    assert policy.tiers[0][1].module.params["hierarchy"] is True
    assert policy.tiers[0][0].flags["enablePreemptable"] is False


def test_a_conf_keeps_volcano_s_silence_about_unknown_arguments() -> None:
    Path("c.conf").write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n'
                              "    arguments: {bogus: 1, binpack.weight: 3}\n", encoding="utf-8")
    assert policies.from_conf(conf_loader.load_conf("c.conf")).tiers[0][0].module.params["weight"] == 3.0


def test_every_shipped_policy_still_resolves() -> None:
    shipped = [p for p in sorted((ROOT / "policies").glob("*.vpol")) if p.read_text().startswith("policy")]
    assert shipped
    for path in shipped:
        assert policies.from_policy_file(path).tiers, path
