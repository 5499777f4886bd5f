"""Option parsing and validation (no Spark session needed)."""

from __future__ import annotations

import pytest

from helpers.option_cases import INVALID_OPTIONS
from rmqstore.plan.predicates import Compare, bounds
from rmqstore.spark.options import OptionError, parse_offsets, parse_options
from rmqstore.spark.reader import _option_predicates


def test_names_are_case_insensitive_and_values_parsed() -> None:
    opts = parse_options({"path": "/s", "MINPARTITIONS": "3", "maxbytesperpartition": "2m",
                          "verifycrc": "true", "Mode": "permissive", "startingTimestamp": "1000",
                          "endingtimestamp": "2024-01-01T00:00:00", "topics": "A, B,A"})
    assert opts.min_partitions == 3
    assert opts.max_bytes_per_partition == 2 * 1024 * 1024
    assert opts.verify_crc is True
    assert opts.mode == "PERMISSIVE"
    assert opts.starting_timestamp == 1000
    assert opts.ending_timestamp == 1704067200000
    assert opts.topics == ("A", "B")
    assert opts.broker_names == ("/s",)


@pytest.mark.parametrize(("options", "named"), INVALID_OPTIONS)
def test_invalid_options_name_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=f"'{named}'"):
        parse_options(options)


def test_unknown_option_suggests_the_close_name() -> None:
    with pytest.raises(OptionError, match="did you mean 'startingOffsets'"):
        parse_options({"path": "/s", "startingoffset": "earliest"})


def test_what_spark_adds_to_a_tables_options_is_skipped() -> None:
    """CREATE TABLE t USING ... OPTIONS (path '/s a', mode 'permissive') as Spark 4.3 passes it."""
    table = {"path": "file:/s%20a", "location": "file:/s%20a", "owner": "root", "provider": "rmqstore",
             "comment": "c", "external": "false", "is_managed_location": "false", "table_type": "EXTERNAL",
             "collation": "UTF8_BINARY", "mode": "permissive", "option.mode": "permissive"}
    opts = parse_options(table)
    assert (opts.paths, opts.broker_names, opts.mode) == (("/s a",), ("/s a",), "PERMISSIVE")
    for name in ("option.verifycrc", "a"):  # a copy of an option not given, a user's table property
        with pytest.raises(OptionError, match=f"'{name}': unknown option"):
            parse_options({**table, name: "x"})


def test_offsets_forms() -> None:
    assert parse_offsets("startingOffsets", "earliest").kind == "earliest"
    assert parse_offsets("startingOffsets", "LATEST").kind == "latest"
    assert parse_offsets("startingOffsets", "4096").physical == 4096
    assert parse_offsets("startingOffsets", "group:cg-orders").group == "cg-orders"
    queues = parse_offsets("startingOffsets", '{"TopicA":{"0":23,"1":-2}}')
    assert queues.kind == "queues"
    assert queues.queues == {"TopicA": {0: 23, 1: -2}}


def test_paths_json_gives_several_stores_with_broker_names() -> None:
    opts = parse_options({"paths": '["/a/store","/b/store/"]', "brokerNames": "broker-a,broker-b"})
    assert opts.paths == ("/a/store", "/b/store/")
    assert opts.broker_names == ("broker-a", "broker-b")
    assert parse_options({"paths": '["/a/store","/b/store/"]'}).broker_names == ("/a/store", "/b/store")


def test_keys_option_accepts_comma_list_and_json_list() -> None:
    assert parse_options({"path": "/s", "keys": "k1,k2"}).keys == ("k1", "k2")
    assert parse_options({"path": "/s", "keys": '["a,b","c"]'}).keys == ("a,b", "c")


def test_max_message_size_is_a_byte_size_defaulting_to_16_times_rocketmq() -> None:
    assert parse_options({"path": "/s"}).max_message_size == 64 * 1024 * 1024
    assert parse_options({"path": "/s", "MAXMESSAGESIZE": "128m"}).max_message_size == 128 * 1024 * 1024
    with pytest.raises(OptionError, match="'maxMessageSize'"):
        parse_options({"path": "/s", "maxMessageSize": "huge"})


def test_timestamp_options_are_a_half_open_window_of_store_times() -> None:
    """startingTimestamp is inclusive, endingTimestamp exclusive (like Kafka's), both epoch ms."""
    opts = parse_options({"path": "/s", "startingTimestamp": "1000", "endingTimestamp": "2000"})
    preds = _option_predicates(opts, None)  # type: ignore[arg-type]  # no queue offsets: no store needed
    assert preds == (Compare("storeTimestamp", ">=", 1_000_000), Compare("storeTimestamp", "<", 2_000_000))
    window = bounds(preds)
    assert (window.begin_ms, window.end_ms) == (1000, 1999)
