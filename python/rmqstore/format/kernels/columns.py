"""The columnar decoder's compiled pass (§2.2-§2.12, §3.1): `measure` sizes the outputs, `decode`
fills every requested column of many records in one pass: fixed fields, variable-length values
copied into contiguous Arrow data buffers with int32 offsets, PROPERTIES parsed per §2.8, KEYS / TAGS
/ UNIQ_KEY, offsetMsgIds (§3.1) and host dictionary codes (§2.4).

Buffers are 1-D uint8 arrays passed read-only (one compiled specialization); outputs of columns not
requested (`decode`'s `want` flags) may be empty arrays. Every record was checked by
`recordscan.scan_record` before its fields are read.
"""

from __future__ import annotations

import numpy as np

from rmqstore.format.contract_layout import SYSFLAG_BORNHOST_V6, SYSFLAG_COMPRESSED, SYSFLAG_STOREHOST_V6
from rmqstore.format.kernels.primitives import HIGH, MIX, load_i32, load_i64, load_word, memcpy
from rmqstore.format.kernels.properties import (
    NAME_AT,
    NAME_LEN,
    VALUE_AT,
    VALUE_LEN,
    find_property,
    name_constant,
    property_scratch,
    split_properties,
)
from rmqstore.format.kernels.recordscan import RECORD, scan_record
from rmqstore.jit import compiled, inlined

_KEY_SEPARATOR = 0x20
_KEYS, _KEYS_PRINT = name_constant(b"KEYS")
_TAGS, _TAGS_PRINT = name_constant(b"TAGS")
_UNIQ_KEY, _UNIQ_KEY_PRINT = name_constant(b"UNIQ_KEY")
_HEX_PAIRS = np.frombuffer(b"".join(b"%02X" % value for value in range(256)), dtype=np.uint16)
"""Byte value -> its two uppercase hex digits as one native-order uint16 (memory order = text order)."""


@compiled
def measure(buf, starts):
    """Sizes of the variable-length outputs: (first row that is no record or -1, BODY bytes,
    TOPIC bytes, PROPERTIES bytes, IPv6 store hosts, compressed bodies)."""
    body = topic = props = v6 = compressed = 0
    for i in range(len(starts)):
        kind, _, sys_flag, _, body_len, _, topic_len, _, props_len = scan_record(buf, starts[i])
        if kind != RECORD:
            return i, 0, 0, 0, 0, 0
        body += body_len
        topic += topic_len
        props += props_len
        if sys_flag & SYSFLAG_STOREHOST_V6:
            v6 += 1
        if sys_flag & SYSFLAG_COMPRESSED:
            compressed += 1
    return -1, body, topic, props, v6, compressed


@inlined
def _ascii(buf, at, length):
    """All bytes of buf[at:at+length] are below 0x80."""
    bits = np.uint64(0)
    p = at
    while p + 8 <= at + length:
        bits |= load_word(buf, p)
        p += 8
    for q in range(p, at + length):
        bits |= np.uint64(buf[q])
    return bits & HIGH == 0


@inlined
def _host_words(buf, at, width):
    """A host (§2.4) as 3 native-order words: bytes 0-8, and for a 20-byte host 8-16 and 12-20."""
    if width == 8:
        return load_word(buf, at), np.uint64(0), np.uint64(0)
    return load_word(buf, at), load_word(buf, at + 8), load_word(buf, at + 12)


@inlined
def _host_code(words, width, table, hosts, host_widths, count):
    """Dictionary code of a host (`_host_words`); a new host is appended. Returns (code, count).

    `table` is an open-addressing hash table (power-of-two size, 0 = empty, else code + 1) with room
    for every host of the batch at load factor 1/2; `hosts` / `host_widths` hold the distinct hosts.
    """
    w0, w1, w2 = words
    h = (w0 * MIX) ^ ((w1 + np.uint64(width)) * np.uint64(0xC2B2AE3D27D4EB4F)) ^ w2
    h ^= h >> np.uint64(31)
    h *= MIX
    mask = len(table) - 1
    slot = np.int64(h >> np.uint64(32)) & mask
    while True:
        entry = table[slot]
        if entry == 0:
            table[slot] = count + 1
            host_widths[count] = width
            hosts[count, 0] = w0
            hosts[count, 1] = w1
            hosts[count, 2] = w2
            return count, count + 1
        code = entry - 1
        if _is_host(words, width, hosts, host_widths, code):
            return code, count
        slot = (slot + 1) & mask


@inlined
def _is_host(words, width, hosts, host_widths, code):
    w0, w1, w2 = words
    return (
        host_widths[code] == width and hosts[code, 0] == w0 and hosts[code, 1] == w1 and hosts[code, 2] == w2
    )


@inlined
def _emit_string(data, offsets, used, row, src, at, length):
    """Append src[at:at+length] as row `row` of a string column; returns the new data length."""
    memcpy(data, used, src, at, length)
    used += length
    offsets[row + 1] = used
    return used


# what `decode` fills: indexes into its `want` flags
WANT_FIXED = 0
WANT_BODY = 1
WANT_TOPIC = 2
WANT_MSG_ID = 3
WANT_BORN_HOST = 4
WANT_STORE_HOST = 5
WANT_PROPERTIES = 6
WANT_KEY = 7
WANT_TAGS = 8
WANT_UNIQ_KEY = 9
WANT_KEYS = 10
WANT_FLAGS = 11


@inlined
def _hex(out, used, buf, at, length):
    """Uppercase hex of buf[at:at+length] into the uint16 array out from index used; returns the new index."""
    for p in range(at, at + length):
        out[used] = _HEX_PAIRS[buf[p]]
        used += 1
    return used


@inlined
def _emit_value(buf, props, e, w, row, offsets, data, valid, used):
    """Row `row` of wanted string column w: the value of property e, null when e < 0; returns the new
    data length."""
    if e < 0:
        valid[w, row] = 0
        offsets[w, row + 1] = used
        return used
    valid[w, row] = 1
    return _emit_string(data[w], offsets[w], used, row, buf, props[VALUE_AT, e], props[VALUE_LEN, e])


@inlined
def _emit_tokens(buf, props, keys, offsets, data, tokens, used):
    """The KEYS value of property `keys` (none if < 0) split at single spaces, empty tokens dropped
    (§2.8), appended as list items; returns (tokens, data length)."""
    if keys < 0:
        return tokens, used
    token = props[VALUE_AT, keys]
    end = token + props[VALUE_LEN, keys]
    for p in range(token, end + 1):
        if p < end and buf[p] != _KEY_SEPARATOR:
            continue
        if p > token:
            used = _emit_string(data, offsets, used, tokens, buf, token, p - token)
            tokens += 1
        token = p + 1
    return tokens, used


@compiled
def decode(
    buf,
    starts,
    want,
    fixed_i32,
    fixed_i64,
    body_offsets,
    body_data,
    reserved,
    topic_offsets,
    topic_data,
    msg_id_offsets,
    msg_id_data,
    host_codes,
    host_table,
    hosts,
    host_widths,
    map_offsets,
    name_offsets,
    name_data,
    value_offsets,
    value_data,
    wanted_offsets,
    wanted_data,
    wanted_valid,
    token_offsets,
    token_data,
    bad_text,
):
    """Fill the columns flagged in `want` (WANT_*) for the records at `starts` in one pass.

    The records must have passed `measure`; outputs of columns not wanted may be empty. String and
    binary columns get int32 offsets (offsets[0] preset to 0) and contiguous data.
    - fixed_i32 rows: queueId, storeSize, bodyCrc, flag, sysFlag, reconsumeTimes; fixed_i64 rows:
      queueOffset, commitLogOffset, bornTimestamp (µs), storeTimestamp (µs), preparedTransactionOffset.
    - BODY: a row with reserved[row] = n >= 0 (reserved may be empty: none) gets n bytes of body_data
      left for the caller to fill (a decompressed body) instead of its stored body.
    - msgId: store host + PHYSICALOFFSET in uppercase hex (§3.1); msg_id_data is uint16, two digits
      per element, offsets in bytes.
    - host_codes rows (born, store): codes of the distinct hosts in `hosts` / `host_widths`,
      interned through `host_table` (`_host_code`).
    - PROPERTIES (§2.8): map offsets per row, then names / values per entry. wanted_* rows 0-2:
      KEYS, TAGS, UNIQ_KEY string columns (data in the wanted_data tuple) with validity; row 3: the
      `keys` list (offsets into the tokens in token_*, validity).
    - A row whose TOPIC (bit 1) or PROPERTIES (bit 2) is not valid UTF-8 gets the bit in bad_text
      and an empty topic / no properties (the caller decodes it with the scalar decoder).

    Returns (entries, tokens, name bytes, value bytes, KEYS bytes, TAGS bytes, UNIQ_KEY bytes,
    token bytes, distinct hosts).
    """
    want_props = (
        want[WANT_PROPERTIES] or want[WANT_KEY] or want[WANT_TAGS] or want[WANT_UNIQ_KEY] or want[WANT_KEYS]
    )
    props = property_scratch()
    body_used = topic_used = msg_id_used = name_used = value_used = token_used = 0
    keys_used = tags_used = uniq_used = 0
    entries = tokens = host_count = 0
    for i in range(len(starts)):
        pos = starts[i]
        _, size, sys_flag, body_at, body_len, topic_at, topic_len, props_at, props_len = scan_record(buf, pos)
        born_len = 20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8
        store_host_at = pos + 56 + born_len
        store_host_len = 20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8
        reconsume_at = store_host_at + store_host_len
        if want[WANT_FIXED]:
            fixed_i32[0, i] = load_i32(buf, pos + 12)
            fixed_i32[1, i] = size
            fixed_i32[2, i] = load_i32(buf, pos + 8)
            fixed_i32[3, i] = load_i32(buf, pos + 16)
            fixed_i32[4, i] = sys_flag
            fixed_i32[5, i] = load_i32(buf, reconsume_at)
            fixed_i64[0, i] = load_i64(buf, pos + 20)
            fixed_i64[1, i] = load_i64(buf, pos + 28)
            fixed_i64[2, i] = load_i64(buf, pos + 40) * 1000
            fixed_i64[3, i] = load_i64(buf, store_host_at - 8) * 1000
            fixed_i64[4, i] = load_i64(buf, reconsume_at + 4)
        for which in range(2):
            if not want[WANT_BORN_HOST + which]:
                continue
            at = pos + 48 if which == 0 else store_host_at
            width = born_len if which == 0 else store_host_len
            words = _host_words(buf, at, width)
            if i > 0 and _is_host(words, width, hosts, host_widths, host_codes[which, i - 1]):
                host_codes[which, i] = host_codes[which, i - 1]
            else:
                code, host_count = _host_code(words, width, host_table, hosts, host_widths, host_count)
                host_codes[which, i] = code
        if want[WANT_MSG_ID]:
            msg_id_used = _hex(msg_id_data, msg_id_used, buf, store_host_at, store_host_len)
            msg_id_used = _hex(msg_id_data, msg_id_used, buf, pos + 28, 8)
            msg_id_offsets[i + 1] = 2 * msg_id_used
        if want[WANT_BODY]:
            if len(reserved) and reserved[i] >= 0:
                body_used += reserved[i]
                body_offsets[i + 1] = body_used
            else:
                body_used = _emit_string(body_data, body_offsets, body_used, i, buf, body_at, body_len)
        if want[WANT_TOPIC]:
            if _ascii(buf, topic_at, topic_len) or valid_utf8(buf, topic_at, topic_len):
                topic_used = _emit_string(topic_data, topic_offsets, topic_used, i, buf, topic_at, topic_len)
            else:
                bad_text[i] |= 1
                topic_offsets[i + 1] = topic_used
        if not want_props:
            continue
        count, ascii = split_properties(buf, props_at, props_len, props)
        if not ascii and not valid_utf8(buf, props_at, props_len):
            bad_text[i] |= 2
            count = 0
        if want[WANT_PROPERTIES]:
            for e in range(count):
                name_used = _emit_string(
                    name_data, name_offsets, name_used, entries, buf, props[NAME_AT, e], props[NAME_LEN, e]
                )
                value_used = _emit_string(
                    value_data,
                    value_offsets,
                    value_used,
                    entries,
                    buf,
                    props[VALUE_AT, e],
                    props[VALUE_LEN, e],
                )
                entries += 1
            map_offsets[i + 1] = entries
        if want[WANT_KEY] or want[WANT_KEYS]:
            keys = find_property(buf, _KEYS, _KEYS_PRINT, count, props)
            if want[WANT_KEY]:
                keys_used = _emit_value(
                    buf, props, keys, 0, i, wanted_offsets, wanted_data, wanted_valid, keys_used
                )
            if want[WANT_KEYS]:
                wanted_valid[3, i] = keys >= 0
                tokens, token_used = _emit_tokens(
                    buf, props, keys, token_offsets, token_data, tokens, token_used
                )
                wanted_offsets[3, i + 1] = tokens
        if want[WANT_TAGS]:
            tags = find_property(buf, _TAGS, _TAGS_PRINT, count, props)
            tags_used = _emit_value(
                buf, props, tags, 1, i, wanted_offsets, wanted_data, wanted_valid, tags_used
            )
        if want[WANT_UNIQ_KEY]:
            uniq = find_property(buf, _UNIQ_KEY, _UNIQ_KEY_PRINT, count, props)
            uniq_used = _emit_value(
                buf, props, uniq, 2, i, wanted_offsets, wanted_data, wanted_valid, uniq_used
            )
    return entries, tokens, name_used, value_used, keys_used, tags_used, uniq_used, token_used, host_count


@compiled
def expand_labels(codes, label_offsets, label_data):
    """String column (offsets, data) whose row i is label codes[i]."""
    rows = len(codes)
    offsets = np.empty(rows + 1, dtype=np.int32)
    offsets[0] = 0
    total = 0
    for i in range(rows):
        code = codes[i]
        total += label_offsets[code + 1] - label_offsets[code]
        offsets[i + 1] = total
    data = np.empty(total, dtype=np.uint8)
    for i in range(rows):
        code = codes[i]
        at = label_offsets[code]
        memcpy(data, offsets[i], label_data, at, label_offsets[code + 1] - at)
    return offsets, data


@compiled
def compressed_bodies(buf, starts):
    """(rows, BODY positions, BODY lengths, sysFlags) of the records whose body is compressed
    (records already checked with `scan_record`)."""
    count = 0
    for i in range(len(starts)):
        if load_i32(buf, starts[i] + 36) & SYSFLAG_COMPRESSED:
            count += 1
    rows = np.empty(count, dtype=np.int64)
    at = np.empty(count, dtype=np.int64)
    length = np.empty(count, dtype=np.int64)
    sys_flags = np.empty(count, dtype=np.int64)
    k = 0
    for i in range(len(starts)):
        if not load_i32(buf, starts[i] + 36) & SYSFLAG_COMPRESSED:
            continue
        _, _, sys_flag, body_at, body_len, _, _, _, _ = scan_record(buf, starts[i])
        if sys_flag & SYSFLAG_COMPRESSED:
            rows[k] = i
            at[k] = body_at
            length[k] = body_len
            sys_flags[k] = sys_flag
            k += 1
    return rows, at, length, sys_flags


@compiled
def valid_utf8(buf, at, length):
    """Well-formed UTF-8 (Unicode table 3-7: no overlongs, surrogates or values above U+10FFFF)."""
    i = at
    end = at + length
    while i < end:
        b = buf[i]
        if b < 0x80:
            i += 1
            continue
        if b < 0xC2 or b > 0xF4:
            return False
        width = 2 if b < 0xE0 else (3 if b < 0xF0 else 4)
        if i + width > end:
            return False
        second = buf[i + 1]
        low, high = 0x80, 0xBF
        if b == 0xE0:
            low = 0xA0
        elif b == 0xED:
            high = 0x9F
        elif b == 0xF0:
            low = 0x90
        elif b == 0xF4:
            high = 0x8F
        if second < low or second > high:
            return False
        for k in range(2, width):
            if buf[i + k] & 0xC0 != 0x80:
                return False
        i += width
    return True
