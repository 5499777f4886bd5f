"""Host encoding (§2.4) and offsetMsgId (§3.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmqstore.format.hosts import decode_host, encode_host, is_ipv6_host
from rmqstore.format.msgid import decode_offset_msg_id, offset_msg_id


def test_ipv4_host_vector() -> None:
    assert encode_host("127.0.0.1:10911") == bytes.fromhex("7F00000100002A9F")
    assert decode_host(bytes.fromhex("7F0000010000CF12")) == "127.0.0.1:53010"


def test_ipv6_host_is_bracketed() -> None:
    raw = encode_host("[::1]:10911")
    assert raw == bytes(15) + b"\x01" + (10911).to_bytes(4, "big")
    assert decode_host(raw) == "[::1]:10911"
    assert is_ipv6_host("[::1]:1") and not is_ipv6_host("1.2.3.4:1")


@given(st.ip_addresses(), st.integers(0, 65535))
def test_host_round_trip(ip: object, port: int) -> None:
    host = f"[{ip}]:{port}" if ":" in str(ip) else f"{ip}:{port}"
    assert decode_host(encode_host(host)) == host


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:", "[::1]10911", "300.0.0.1:1", "1.2.3.4:70000", ""]
)
def test_bad_host_text_is_rejected(host: str) -> None:
    with pytest.raises(ValueError, match="host"):
        encode_host(host)


def test_decode_host_rejects_wrong_width() -> None:
    with pytest.raises(ValueError, match="8 or 20 bytes"):
        decode_host(b"\x00" * 7)


def test_offset_msg_id_vector_of_spec_8_2() -> None:
    msg_id = offset_msg_id(encode_host("127.0.0.1:10911"), 0)
    assert msg_id == "7F00000100002A9F0000000000000000"
    assert decode_offset_msg_id(msg_id) == ("127.0.0.1:10911", 0)


def test_ipv6_offset_msg_id_has_56_chars() -> None:
    msg_id = offset_msg_id(encode_host("[::1]:10911"), 123456789)
    assert len(msg_id) == 56
    assert decode_offset_msg_id(msg_id.lower()) == ("[::1]:10911", 123456789)


def test_uniq_key_is_not_an_offset_msg_id() -> None:
    # §3.2: the two bytes after the address are the pid, so the port is out of range.
    uniq_key = "7F00000104D21B6D358605265C000000"
    with pytest.raises(ValueError, match="port"):
        decode_offset_msg_id(uniq_key)


@pytest.mark.parametrize("text", ["", "7F00", "Z" * 32, "7F00000100002A9F00000000000000"])
def test_malformed_ids_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="offsetMsgId"):
        decode_offset_msg_id(text)
