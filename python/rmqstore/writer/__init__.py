"""Writes RocketMQ broker stores byte for byte as a broker would (demo data, fixtures, tests).

`StoreWriter` plays producer and broker; `MessageSpec` is one message as a producer sends it;
`rmqstore.writer.demo.create_demo_store` writes a realistic store of a given size.
"""

from rmqstore.writer.message import AppendResult, MessageSpec, UniqKeyGenerator
from rmqstore.writer.store_writer import StoreWriter

__all__ = ["AppendResult", "MessageSpec", "StoreWriter", "UniqKeyGenerator"]
