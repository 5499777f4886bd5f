"""Byte layouts of a RocketMQ store: pure functions over bytes and numpy buffers.

No file system and no Spark here. Section numbers ("§2.12", also written "spec §2.12") in the
docstrings of the whole package refer to docs/format.md, which describes every byte layout cited.
"""
