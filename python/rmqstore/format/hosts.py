"""BORNHOST / STOREHOSTADDRESS encoding: address bytes then a 4-byte big-endian port (spec §2.4).

Text form is `ip:port` for IPv4 and `[addr]:port` for IPv6 (compressed IPv6 notation).
"""

from __future__ import annotations

import ipaddress
import struct

from rmqstore.format.layout import IPV4_HOST_LEN, IPV6_HOST_LEN

_MAX_PORT = 0xFFFF


def is_ipv6_host(host: str) -> bool:
    """True for the bracketed IPv6 form `[addr]:port`."""
    return host.startswith("[")


def _split_host(host: str) -> tuple[str, str]:
    if is_ipv6_host(host):
        addr, sep, port = host[1:].partition("]:")
    else:
        addr, sep, port = host.rpartition(":")
    if not sep or not addr or not port.isdigit():
        raise ValueError(f"host {host!r} is not 'ip:port' or '[ipv6]:port'")
    return addr, port


def encode_host(host: str) -> bytes:
    """`ip:port` -> 4 address bytes + int port; `[v6]:port` -> 16 address bytes + int port (§2.4)."""
    addr_text, port_text = _split_host(host)
    try:
        addr = ipaddress.IPv6Address(addr_text) if is_ipv6_host(host) else ipaddress.IPv4Address(addr_text)
    except ValueError as exc:
        raise ValueError(f"host {host!r}: {exc}") from None
    port = int(port_text)
    if port > _MAX_PORT:
        raise ValueError(f"host {host!r}: port {port} out of range 0..{_MAX_PORT}")
    return addr.packed + struct.pack(">i", port)


def decode_host(data: bytes) -> str:
    """8 bytes -> `a.b.c.d:port`, 20 bytes -> `[v6]:port` (§2.4). The port is shown as stored."""
    data = bytes(data)
    if len(data) == IPV4_HOST_LEN:
        return f"{ipaddress.IPv4Address(data[:4])}:{struct.unpack_from('>i', data, 4)[0]}"
    if len(data) == IPV6_HOST_LEN:
        return f"[{ipaddress.IPv6Address(data[:16])}]:{struct.unpack_from('>i', data, 16)[0]}"
    raise ValueError(f"a host is {IPV4_HOST_LEN} or {IPV6_HOST_LEN} bytes, got {len(data)}")
