"""Every mistake in a conf is a diagnostic with its code, exact position, message and help; all are reported."""
from __future__ import annotations

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load import conf as loader
from vpolicy.model import conf as model

FILE = "bad.conf"
Pinned = tuple[str, int, int, str, str]  # code, line, col, message, help


def diagnostics_of(text: str) -> list[Pinned]:
    with pytest.raises(PolicyError) as caught:
        loader.parse_conf_text(text, file=FILE)
    out = []
    for d in caught.value.diagnostics:
        assert d.span is not None and d.help is not None
        out.append((d.code, d.span.line, d.span.col, d.message, d.help))
    return out


def plugins(*entries: str) -> str:
    return "actions: allocate\ntiers:\n- plugins:\n" + "".join(f"  {e}\n" for e in entries)


@pytest.mark.parametrize("text, expected", [
    pytest.param(
        'actions: "enqueue, alocate, backfill"\n',
        ("conf.unknown-action", 1, 20, "unknown action 'alocate'", "did you mean 'allocate'?"),
        id="unknown-action-in-quoted-string"),
    pytest.param(
        "actions: enqueue,  allocate,premept\n",
        ("conf.unknown-action", 1, 29, "unknown action 'premept'", "did you mean 'preempt'?"),
        id="unknown-action-in-plain-string"),
    pytest.param(
        "actions:\n- enqueue\n- shufle\n",
        ("conf.unknown-action", 3, 3, "unknown action 'shufle'", "did you mean 'shuffle'?"),
        id="unknown-action-in-list"),
    pytest.param(
        "actions: enqueue, elect\n",
        ("conf.unknown-action", 1, 19, "unknown action 'elect'",
         "known actions: enqueue, allocate, backfill, preempt, reclaim, shuffle, gangpreempt, gangreclaim"),
        id="unknown-action-nothing-close"),
    pytest.param(
        'actions: "enqueue, allocate,"\n',
        ("conf.unknown-action", 1, 28, "empty action name in 'actions'", "remove the extra comma"),
        id="trailing-comma"),
    pytest.param(
        "tiers: []\n",
        ("conf.missing-key", 1, 1, "the scheduler conf has no 'actions'",
         'add the actions to run, e.g. actions: "enqueue, allocate, backfill"'),
        id="missing-actions"),
    pytest.param(
        "actions: ''\n",
        ("conf.missing-key", 1, 10, "'actions' is empty",
         'list the actions to run, e.g. actions: "enqueue, allocate, backfill"'),
        id="empty-actions"),
    pytest.param(
        "actions: {allocate: true}\n",
        ("conf.wrong-type", 1, 10, "'actions' must be a comma-separated string, not a mapping",
         'write e.g. actions: "enqueue, allocate, backfill"'),
        id="actions-mapping"),
    pytest.param(
        plugins("- name: gangg"),
        ("conf.unknown-plugin", 4, 11, "unknown plugin 'gangg'", "did you mean 'gang'?"),
        id="unknown-plugin"),
    pytest.param(
        plugins("- name: numaaware"),
        ("conf.unknown-plugin", 4, 11, "unknown plugin 'numaaware'", "did you mean 'numa-aware'?"),
        id="go-package-name-instead-of-plugin-name"),
    pytest.param(
        plugins("- name: gang", "  enablePreemtable: false"),
        ("conf.unknown-flag", 5, 5, "unknown option 'enablePreemtable' for plugin 'gang'",
         "did you mean 'enablePreemptable'?"),
        id="misspelt-flag"),
    pytest.param(
        plugins("- name: proportion", "  enableAllocatable: false"),
        ("conf.unknown-flag", 5, 5, "unknown option 'enableAllocatable' for plugin 'proportion'",
         "did you mean 'enabledAllocatable'?"),
        id="flag-with-the-other-prefix"),
    pytest.param(
        plugins("- name: gang", "  weight: 3"),
        ("conf.unknown-flag", 5, 5, "unknown option 'weight' for plugin 'gang'",
         "plugin options are name, arguments, enableHierarchy and Volcano's enable* flags"),
        id="unknown-option-nothing-close"),
    pytest.param(
        plugins("- name: gang", "  enableJobReady: 'true'"),
        ("conf.wrong-type", 5, 21, "'enableJobReady' must be true or false, not the string 'true'",
         "remove the quotes: write true or false"),
        id="quoted-boolean"),
    pytest.param(
        plugins("- name: gang", "  enableJobReady: 1"),
        ("conf.wrong-type", 5, 21, "'enableJobReady' must be true or false, not the number 1", "write true or false"),
        id="number-flag"),
    pytest.param(
        plugins("- name: gang", "  enableJobReady:"),
        ("conf.wrong-type", 5, 5, "'enableJobReady' must be true or false, not null", "write true or false"),
        id="empty-flag"),
    pytest.param(
        plugins("- name: drf", "  enableHierarchy: yes please"),
        ("conf.wrong-type", 5, 22, "'enableHierarchy' must be true or false, not the string 'yes please'",
         "write true or false"),
        id="hierarchy-not-boolean"),
    pytest.param(
        plugins("- name: binpack", "  arguments: [binpack.weight, 10]"),
        ("conf.wrong-type", 5, 16, "the arguments of plugin 'binpack' must be a mapping, not a list",
         "write arguments as 'key: value' lines"),
        id="arguments-list"),
    pytest.param(
        plugins("- gang"),
        ("conf.wrong-type", 4, 5, "a plugin entry must be a mapping with 'name', not the string 'gang'",
         "write '- name: gang'"),
        id="plugin-entry-bare-name"),
    pytest.param(
        plugins("- enableJobOrder: false"),
        ("conf.missing-key", 4, 5, "a plugin entry has no 'name'", "add 'name: <plugin>', e.g. 'name: gang'"),
        id="plugin-without-name"),
    pytest.param(
        plugins("- name: 3"),
        ("conf.wrong-type", 4, 11, "a plugin name must be a string, not the number 3",
         ("known plugins: priority, gang, conformance, overcommit, drf, predicates, proportion, nodeorder, "
          "binpack, capacity, deviceshare, resource-strategy-fit, tdm, sla, task-topology, numa-aware, cdp, "
          "rescheduling, usage, pdb, nodegroup, network-topology-aware, extender, resourcequota")),
        id="plugin-name-number"),
    pytest.param(
        "actions: allocate\ntiers:\n  plugins: []\n",
        ("conf.wrong-type", 3, 3, "'tiers' must be a list of tiers, not a mapping",
         "write each tier as '- plugins: [...]'"),
        id="tiers-mapping"),
    pytest.param(
        "actions: allocate\ntiers:\n- plugin:\n  - name: gang\n",
        ("conf.unknown-key", 3, 3, "unknown key 'plugin' in a tier", "did you mean 'plugins'?"),
        id="tier-unknown-key"),
    pytest.param(
        "actions: allocate\ntiers:\n- plugins: {name: gang}\n",
        ("conf.wrong-type", 3, 12, "'plugins' must be a list, not a mapping",
         "write each plugin as '- name: <plugin>'"),
        id="plugins-mapping"),
    pytest.param(
        "actions: allocate\ntier:\n- plugins: []\n",
        ("conf.unknown-key", 2, 1, "unknown key 'tier' in the scheduler conf", "did you mean 'tiers'?"),
        id="top-level-typo"),
    pytest.param(
        "actions: allocate\nschedulerName: volcano\n",
        ("conf.unknown-key", 2, 1, "unknown key 'schedulerName' in the scheduler conf",
         "expected one of: actions, tiers, configurations, metrics"),
        id="top-level-unknown"),
    pytest.param(
        "- actions: allocate\n",
        ("conf.wrong-type", 1, 1, "the scheduler conf must be a mapping, not a list",
         "write the conf as 'actions: ...' and 'tiers: ...' keys"),
        id="conf-is-a-list"),
    pytest.param(
        "# nothing here\n",
        ("conf.missing-key", 1, 1, "the scheduler conf is empty: 'actions' is missing",
         'start from Volcano\'s default: actions: "enqueue, allocate, backfill"'),
        id="empty-conf"),
    pytest.param(
        "actions: preempt\nconfigurations:\n- name: premept\n  arguments: {}\n",
        ("conf.unknown-action", 3, 9, "unknown action 'premept' in configurations", "did you mean 'preempt'?"),
        id="configuration-unknown-action"),
    pytest.param(
        "actions: preempt\nconfigurations:\n- name: preempt\n  arguments: true\n",
        ("conf.wrong-type", 4, 14, "the arguments of action 'preempt' must be a mapping, not the boolean true",
         "write arguments as 'key: value' lines"),
        id="configuration-arguments-not-mapping"),
    pytest.param(
        "actions: preempt\nconfigurations:\n- arguments: {}\n",
        ("conf.missing-key", 3, 3, "a configuration has no 'name'", "add 'name: <action>', e.g. 'name: preempt'"),
        id="configuration-without-name"),
    pytest.param(
        "actions: preempt\nconfigurations:\n- name: preempt\n  args: {}\n",
        ("conf.unknown-key", 4, 3, "unknown key 'args' in a configuration", "did you mean 'arguments'?"),
        id="configuration-unknown-key"),
    pytest.param(
        "actions: preempt\nconfigurations:\n  preempt: {}\n",
        ("conf.wrong-type", 3, 3, "'configurations' must be a list, not a mapping",
         "write each entry as '- name: <action>'"),
        id="configurations-mapping"),
    pytest.param(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n   enableJobOrder: true\n",
        ("conf.yaml-syntax", 5, 4, "invalid YAML: expected <block end>, but found '<block mapping start>'",
         "check the indentation and the quoting: this is inside the block mapping at line 3"),
        id="yaml-bad-indentation"),
    pytest.param(
        'actions: "enqueue, allocate\n',
        ("conf.yaml-syntax", 2, 1, "invalid YAML: found unexpected end of stream",
         "check the indentation and the quoting: this is inside the quoted scalar at line 1"),
        id="yaml-unclosed-quote"),
    pytest.param(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n\tenableJobOrder: true\n",
        ("conf.yaml-syntax", 5, 1, "invalid YAML: found character '\\t' that cannot start any token",
         "YAML indents with spaces, not tabs"),
        id="yaml-tab"),
    pytest.param(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  name: priority\n",
        ("conf.unknown-key", 5, 3, "unknown key 'name' in a tier", "expected one of: plugins"),
        id="plugin-key-under-the-tier"),
    pytest.param(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    name: priority\n",
        ("conf.duplicate-key", 5, 5, "duplicate key 'name'",
         "a key may appear once in a mapping; remove or merge the repeated one"),
        id="duplicate-key"),
    pytest.param(
        "actions: []\n",
        ("conf.missing-key", 1, 10, "'actions' is empty",
         'list the actions to run, e.g. actions: "enqueue, allocate, backfill"'),
        id="empty-actions-list"),
    pytest.param(
        plugins("- name: overcommit", "  arguments: {overcommit-factor: nan}"),
        ("conf.wrong-type", 5, 36, "argument 'overcommit-factor' of plugin 'overcommit' must be a finite number, "
                                   "not nan", "write a number such as 1.5"),
        id="nan-argument"),
    pytest.param(
        plugins("- name: nodeorder", "  arguments: {leastrequested.weight: 'nan'}"),
        ("conf.wrong-type", 5, 40, "argument 'leastrequested.weight' of plugin 'nodeorder' must be a finite "
                                   "number, not 'nan'", "write a number such as 1.5"),
        id="quoted-nan-argument"),
    pytest.param(
        plugins("- name: nodeorder", "  arguments: {leastrequested.weight: .inf}"),
        ("conf.wrong-type", 5, 40, "argument 'leastrequested.weight' of plugin 'nodeorder' must be a finite "
                                   "number, not .inf", "write a number such as 1.5"),
        id="infinite-argument"),
    pytest.param(
        plugins("- name: binpack", "  arguments: {binpack.weight: 1e400}"),
        ("conf.wrong-type", 5, 33, "argument 'binpack.weight' of plugin 'binpack' must be a finite number, "
                                   "not 1e400", "write a number such as 1.5"),
        id="argument-beyond-a-float"),
    pytest.param(
        plugins("- name: binpack", "  arguments: {binpack.weight: 1" + "0" * 400 + "}"),
        ("conf.wrong-type", 5, 33, "argument 'binpack.weight' of plugin 'binpack' must be a finite number, "
                                   "not 1" + "0" * 400, "write a number such as 1.5"),
        id="integer-beyond-a-float"),
    pytest.param(
        "actions: allocate\nconfigurations:\n- name: allocate\n  arguments: {optimizeBudget: -.inf}\n",
        ("conf.wrong-type", 4, 31, "argument 'optimizeBudget' of action 'allocate' must be a finite number, "
                                   "not -.inf", "write a number such as 1.5"),
        id="infinite-action-argument"),
])
def test_a_conf_mistake_is_pinned_to_its_position(text: str, expected: Pinned) -> None:
    assert diagnostics_of(text) == [expected]


def test_drf_with_hierarchy_and_proportion_is_an_error_pointing_at_both() -> None:
    text = plugins("- name: drf", "  enableHierarchy: true", "- name: proportion")
    with pytest.raises(PolicyError) as caught:
        loader.parse_conf_text(text, file=FILE)
    (d,) = caught.value.diagnostics
    assert (d.code, str(d.span), d.message) == (
        "conf.drf-hierarchy-with-proportion", "bad.conf:5:22",
        "drf with enableHierarchy: true cannot be combined with proportion")
    assert d.help == "remove proportion (hierarchical drf shares queues itself) or set enableHierarchy: false"
    assert [(str(span), note) for span, note in d.related] == [("bad.conf:6:11", "proportion is configured here")]


def test_drf_with_hierarchy_and_proportion_in_different_tiers_is_an_error_too() -> None:
    text = ("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n"
            "- plugins:\n  - name: proportion\n")
    assert [d[0] for d in diagnostics_of(text)] == ["conf.drf-hierarchy-with-proportion"]


def test_hierarchical_drf_is_not_implemented_and_says_so_where_it_is_turned_on() -> None:
    text = plugins("- name: drf", "  enableHierarchy: true", "- name: capacity")
    conf = loader.parse_conf_text(text, file=FILE)
    (d,) = conf.warning_diagnostics
    assert (d.code, d.severity, str(d.span)) == ("conf.unsupported-hierarchy", "warning", "bad.conf:5:22")
    assert "queue order and reclaim can differ from Volcano's" in d.message


def test_drf_with_hierarchy_false_and_proportion_is_fine() -> None:
    text = plugins("- name: drf", "  enableHierarchy: false", "- name: proportion")
    conf = loader.parse_conf_text(text, file=FILE)
    assert [p.name for p in conf.plugins()] == ["drf", "proportion"]


def test_every_mistake_in_one_file_is_reported_sorted_by_position_with_warnings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(model.PARTIAL_PLUGINS, "usage", "a part left out")  # none is today: declare one
    text = (
        'actions: "enqueue, alocate,, backfill"\n'   # 1
        "tiers:\n"                                    # 2
        "- plugins:\n"                                # 3
        "  - name: priority\n"                        # 4
        "  - name: gang\n"                            # 5
        "    enablePreemtable: false\n"               # 6
        '    enableJobOrder: "true"\n'                # 7
        "  - name: usage\n"                           # 8
        "  - name: proportions\n"                     # 9
        "configurations:\n"                           # 10
        "- name: preemt\n"                            # 11
        "metric: {}\n"                                # 12
    )
    assert [(code, line, col) for code, line, col, _, _ in diagnostics_of(text)] == [
        ("conf.unknown-action", 1, 20),
        ("conf.unknown-action", 1, 27),
        ("conf.unknown-flag", 6, 5),
        ("conf.wrong-type", 7, 21),
        ("conf.partial-plugin", 8, 11),
        ("conf.unknown-plugin", 9, 11),
        ("conf.unknown-action", 11, 9),
        ("conf.unknown-key", 12, 1),
    ]


def test_the_error_renders_with_position_snippet_and_help() -> None:
    with pytest.raises(PolicyError) as caught:
        loader.parse_conf_text(plugins("- name: gang", "  enablePreemtable: false"), file="render.conf")
    (d,) = caught.value.diagnostics
    assert d.render() == (
        "render.conf:5:5: error[conf.unknown-flag]: unknown option 'enablePreemtable' for plugin 'gang'\n"
        "    5 |     enablePreemtable: false\n"
        "      |     ^^^^^^^^^^^^^^^^\n"
        "   help: did you mean 'enablePreemptable'?")
    assert str(caught.value) == (
        "render.conf:5:5: error[conf.unknown-flag]: unknown option 'enablePreemtable' for plugin 'gang' "
        "(did you mean 'enablePreemptable'?)")


def test_a_configuration_given_twice_warns_and_the_first_wins() -> None:
    conf = loader.parse_conf_text(
        "actions: preempt\nconfigurations:\n- name: preempt\n  arguments: {a: 1}\n"
        "- name: preempt\n  arguments: {a: 2}\n", file=FILE)
    assert conf.action_arguments("preempt") == {"a": 1}
    assert conf.warnings == (("bad.conf:5:9: warning[conf.duplicate-configuration]: action 'preempt' is "
                              "configured twice; the first wins (merge the arguments into the first entry)"),)
