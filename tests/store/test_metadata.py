"""consumerOffset.json (bare integer keys, .bak fallback), checkpoint, abort."""

from __future__ import annotations

import os
import pickle

import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.format.checkpoint import Checkpoint
from rmqstore.store import Store, StoreCorruptionError


@pytest.fixture
def b(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"))
    fill(b, 5)
    return b


def _config(b, name, text):
    os.makedirs(os.path.join(b.root, "config"), exist_ok=True)
    with open(os.path.join(b.root, "config", name), "w") as fh:
        fh.write(text)


def test_consumer_offsets_with_bare_integer_keys(b):
    b.consumer_offsets = {"TopicA@g1": {0: 7, 1: 12}, "%RETRY%g1@g1": {0: 1}}
    b.finish()
    with open(os.path.join(b.root, "config", "consumerOffset.json")) as fh:
        text = fh.read()
    assert "0:7" in text.replace(" ", "").replace("\t", "").replace("\n", "")
    assert Store.open(b.root).consumer_offsets() == {("TopicA", "g1"): {0: 7, 1: 12},
                                                     ("%RETRY%g1", "g1"): {0: 1}}


@pytest.mark.parametrize("main", [None, "", "{not json", '{"offsetTable":'])
def test_bak_fallback(b, main):
    if main is not None:
        _config(b, "consumerOffset.json", main)
    _config(b, "consumerOffset.json.bak", '{"offsetTable":{"T@g":{3:4}}}')
    b.finish()
    assert Store.open(b.root).consumer_offsets() == {("T", "g"): {3: 4}}


def test_missing_and_unparseable_config(b):
    b.finish(guard=False)
    assert Store.open(b.root).consumer_offsets() == {}
    _config(b, "consumerOffset.json", "{broken")
    with pytest.raises(StoreCorruptionError, match=r"consumerOffset\.json"):
        Store.open(b.root).consumer_offsets()


def test_checkpoint_and_abort(b):
    b.finish(guard=False)
    store = Store.open(b.root)
    assert store.checkpoint == Checkpoint(b.written[-1].store_ts, b.written[-1].store_ts, 0)
    assert not store.abort_present
    open(os.path.join(b.root, "abort"), "w").close()
    os.remove(os.path.join(b.root, "checkpoint"))
    store = Store.open(b.root)
    assert store.abort_present and store.checkpoint is None
    assert store.max_offset == b.cursor  # an abort file changes nothing: no recovery, no writes



def test_pickled_store_carries_the_valid_end_it_found(b):
    """Executors reuse the driver's valid end (one snapshot of a live log) instead of re-walking."""
    b.finish()
    store = Store.open(b.root)
    assert "end" not in pickle.loads(pickle.dumps(store)).log.__dict__
    end = store.log_end
    copy = pickle.loads(pickle.dumps(store))
    assert copy.log.__dict__["end"] == end
    assert copy.max_offset == end.offset
    assert copy.stats.bytes_read == 0
