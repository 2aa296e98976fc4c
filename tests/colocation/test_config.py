"""The volcano-agent-configuration ConfigMap: defaults, merge order, node labels, validation."""
from __future__ import annotations

import json

import pytest

from cluster_adapter.colocation import config
from tests.colocation.fakes import node

OVERSUB = {config.OVERSUBSCRIPTION_LABEL: "true"}


def test_defaults_are_volcanos() -> None:
    cfg = config.for_node(None, node(labels=OVERSUB))
    assert cfg.watermarks == config.Watermarks(cpu_high=80, memory_high=60, cpu_low=30, memory_low=30)
    assert (cfg.high_usage_count_limit, cfg.oversubscription_types) == (6, ("cpu", "memory"))
    assert (cfg.cpu_throttling_threshold, cfg.cpu_jitter_limit_percent, cfg.cpu_recover_limit_percent) == (80, 1, 10)
    assert not cfg.cpu_qos and not cfg.cpu_burst and not cfg.memory_qos and not cfg.cpu_throttling
    assert cfg.enabled("oversubscription") and cfg.enabled("eviction")


@pytest.mark.parametrize("labels, colocation, oversub", [
    pytest.param({}, False, False, id="no-labels"),
    pytest.param({config.COLOCATION_LABEL: "true"}, True, False, id="colocation-only"),
    pytest.param({config.OVERSUBSCRIPTION_LABEL: "True"}, True, True, id="oversubscription-implies-colocation"),
    pytest.param({config.OVERSUBSCRIPTION_LABEL: "yes"}, False, False, id="not-a-go-bool-is-false"),
])
def test_node_labels_switch_the_features(labels: dict[str, str], colocation: bool, oversub: bool) -> None:
    document = {"globalConfig": {"cpuQosConfig": {"enable": True}}}
    cfg = config.for_node(document, node(labels=labels))
    assert (cfg.colocation, cfg.oversubscription_node) == (colocation, oversub)
    assert cfg.enabled("cpu-qos") == colocation
    assert cfg.enabled("oversubscription") == oversub


def test_node_config_overrides_global_field_by_field_and_the_last_match_wins() -> None:
    document = config.parse_document(json.dumps({
        "globalConfig": {"evictingConfig": {"evictingCPUHighWatermark": 70, "evictingCPULowWatermark": 20}},
        "nodesConfig": [
            {"selector": {"matchLabels": {"pool": "web"}}, "evictingConfig": {"evictingCPUHighWatermark": 90}},
            {"selector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["web"]}]},
             "evictingConfig": {"evictingCPUHighWatermark": 85}},
            {"selector": {"matchLabels": {"pool": "db"}}, "evictingConfig": {"evictingCPUHighWatermark": 50}},
        ]}))
    web = config.for_node(document, node(labels={"pool": "web", **OVERSUB}))
    assert (web.watermarks.cpu_high, web.watermarks.cpu_low, web.watermarks.memory_high) == (85, 20, 60)
    other = config.for_node(document, node(labels={"pool": "batch"}))
    assert other.watermarks.cpu_high == 70


def test_a_missing_selector_matches_no_node_and_an_empty_one_every_node() -> None:
    document = {"nodesConfig": [{"cpuQosConfig": {"enable": True}}]}
    assert not config.for_node(document, node(labels=OVERSUB)).cpu_qos
    document = {"nodesConfig": [{"selector": {}, "cpuQosConfig": {"enable": True}}]}
    assert config.for_node(document, node(labels=OVERSUB)).cpu_qos


@pytest.mark.parametrize("document, problem", [
    pytest.param({"globalConfig": {"evictingConfig": {"evictingCPULowWatermark": 90}}},
                 "evictingConfig: cpu evicting low watermark (90) is higher than high watermark (80)", id="low-above-high"),
    pytest.param({"globalConfig": {"evictingConfig": {"evictingMemoryHighWatermark": -5}}},
                 "evictingConfig.evictingMemoryHighWatermark: must be a positive number", id="negative-watermark"),
    pytest.param({"globalConfig": {"overSubscriptionConfig": {"overSubscriptionTypes": "cpu,gpu"}}},
                 "overSubscriptionConfig.overSubscriptionTypes: overSubscriptionType(gpu) is not supported, "
                 "only supports cpu/memory", id="bad-type"),
    pytest.param({"globalConfig": {"networkQosConfig": {"offlineLowBandwidthPercent": 50,
                                                        "offlineHighBandwidthPercent": 20}}},
                 "networkQosConfig: offlineHighBandwidthPercent cannot be less than offlineLowBandwidthPercent",
                 id="network-low-above-high"),
])
def test_invalid_merged_configurations_are_refused_as_volcano_refuses_them(document: dict, problem: str) -> None:
    with pytest.raises(config.ConfigError) as err:
        config.for_node(document, node(labels=OVERSUB))
    assert err.value.problems[0] == problem


@pytest.mark.parametrize("text, problem", [
    pytest.param('{"globalConfig": {"evictingConfg": {}}}',
                 "globalConfig.evictingConfg: unknown key (did you mean 'evictingConfig'?)", id="unknown-section"),
    pytest.param('{"globalConfig": {"evictingConfig": {"evictingCPUHighWatermark": "80"}}}',
                 'globalConfig.evictingConfig.evictingCPUHighWatermark: expected an integer, got "80"', id="string-int"),
    pytest.param('{"nodesConfig": [{"selector": {}, "cpuQosConfig": {"enable": "yes"}}]}',
                 'nodesConfig[0].cpuQosConfig.enable: expected true or false, got "yes"', id="string-bool"),
    pytest.param('{"globalConfig": {', "colocation-config:1:19: not JSON: Expecting property name enclosed in "
                 "double quotes", id="not-json"),
])
def test_documents_that_do_not_decode_say_where(text: str, problem: str) -> None:
    with pytest.raises(config.ConfigError) as err:
        config.parse_document(text)
    assert err.value.problems == [problem]


def test_sections_volcano_has_and_this_agent_does_not_build_are_accepted_and_reported() -> None:
    document = config.parse_document('{"globalConfig": {"networkQosConfig": {"enable": true}, '
                                     '"timeBasedQoSPolicies": [{"name": "night"}]}}')
    cfg = config.for_node(document, node(labels=OVERSUB))
    assert len(cfg.not_built) == 1 and cfg.not_built[0].startswith("networkQosConfig: network QoS needs eBPF")


@pytest.mark.parametrize("annotations, expected, why", [
    pytest.param({}, (80, 30), "", id="none-use-config"),
    pytest.param({"volcano.sh/evicting-cpu-high-watermark": "70", "volcano.sh/evicting-cpu-low-watermark": "40"},
                 (70, 40), "", id="new-keys"),
    pytest.param({"volcano.sh/oversubscription-evicting-cpu-high-watermark": "65"}, (65, 30), "", id="old-key"),
    pytest.param({"volcano.sh/evicting-cpu-high-watermark": "20"}, (80, 30),
                 "cpu low watermark 30 is not below high watermark 20 in the node's annotations", id="inverted"),
])
def test_node_watermark_annotations_override_the_config(annotations: dict[str, str], expected: tuple[int, int],
                                                         why: str) -> None:
    marks, reason = config.watermarks_for(node(annotations=annotations), config.Watermarks(80, 60, 30, 30))
    assert (marks.cpu_high, marks.cpu_low) == expected
    assert reason == why
