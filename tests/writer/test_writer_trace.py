"""The trace writer spells every vector's body as RocketMQ's TraceDataEncoder does (docs/format.md §10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqstore.format import contract_trace as ct
from rmqstore.writer.trace import trace_keys, trace_message, trace_record

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "trace_vectors.json").read_text())


def _field_counts(body: str) -> list[int]:
    return [len(r.split(chr(ct.FIELD_SEPARATOR))) for r in body.split(chr(ct.RECORD_END))[:-1]]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_records_encode_to_the_vector_body(vector: dict) -> None:
    spec = trace_message(vector["records"], field_counts=_field_counts(vector["body"]))
    assert spec.body.decode() == vector["body"]
    assert spec.topic == ct.DEFAULT_TOPIC


def test_default_variant_is_what_current_clients_write() -> None:
    pub = next(v for v in VECTORS["vectors"] if v["name"] == "pub-5x")
    assert trace_record(pub["records"][0]) == pub["body"].split(chr(ct.RECORD_END))[0] + chr(ct.RECORD_END)
    with pytest.raises(ValueError, match="no Pub record of 12 fields"):
        trace_record(pub["records"][0], 12)


def test_keys_hold_each_msg_id_then_its_keys() -> None:
    records = [{"msgId": "M1", "key": "a b"}, {"msgId": "M2", "key": None}, {"msgId": "M1", "key": "b  c"}]
    assert trace_keys(records) == ["M1", "a", "b", "M2", "c"]
