"""fastjson broker config files with bare integer keys (§1.4)."""

from __future__ import annotations

import json

import pytest

from rmqstore.format.brokerconfig import consumer_offsets, encode_fastjson, parse_fastjson, topic_configs

CONSUMER_OFFSET_JSON = """{
\t"offsetTable":{
\t\t"RMQ_SYS_TRANS_OP_HALF_TOPIC@CID_RMQ_SYS_TRANS":{0:7
\t\t},
\t\t"TopicTest@group-a":{0:250,1:249,-1:3},
\t\t"%RETRY%group-a@group-a":{0:0},
\t\t"broken-key":{0:1}
\t},
\t"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000}
}"""


def test_bare_integer_keys_are_parsed() -> None:
    doc = parse_fastjson(CONSUMER_OFFSET_JSON)
    assert consumer_offsets(doc) == {
        ("RMQ_SYS_TRANS_OP_HALF_TOPIC", "CID_RMQ_SYS_TRANS"): {0: 7},
        ("TopicTest", "group-a"): {0: 250, 1: 249, -1: 3},
        ("%RETRY%group-a", "group-a"): {0: 0},
    }


def test_strings_that_look_like_bare_keys_are_untouched() -> None:
    doc = parse_fastjson('{"a":"{1:2,3:4}", 5:"x,6:y"}')
    assert doc == {"a": "{1:2,3:4}", "5": "x,6:y"}


def test_invalid_text_names_the_position() -> None:
    with pytest.raises(ValueError, match="line 1 column"):
        parse_fastjson("{0:}")


def test_topic_configs() -> None:
    doc = parse_fastjson(
        '{"dataVersion":{"counter":1},"topicConfigTable":{"TopicTest":{"topicName":"TopicTest",'
        '"readQueueNums":8,"writeQueueNums":8,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,'
        '"order":false,"attributes":{"+queue.type":"SimpleCQ"}}}}'
    )
    configs = topic_configs(doc)
    assert list(configs) == ["TopicTest"]
    assert configs["TopicTest"]["readQueueNums"] == 8
    assert topic_configs({}) == {}


def test_encode_is_tab_pretty_with_bare_keys_and_parses_back() -> None:
    doc = {"offsetTable": {"TopicTest@g": {0: 7, 1: 12}}, "dataVersion": {"counter": 1}, "empty": {}}
    text = encode_fastjson(doc)
    assert '\t\t"TopicTest@g":{\n\t\t\t0:7,\n\t\t\t1:12\n\t\t}' in text
    assert '"empty":{}' in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert consumer_offsets(parse_fastjson(text)) == {("TopicTest", "g"): {0: 7, 1: 12}}


def test_encode_round_trips_nested_values() -> None:
    doc = {"a": [1, "x", {"b": None, "c": True}], "ü": 'é\n"'}
    assert parse_fastjson(encode_fastjson(doc)) == doc
