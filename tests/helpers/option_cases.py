"""Option sets both the option tests (tests/spark) and the contract suite (tests/contract) check."""

INVALID_OPTIONS = [
    ({"path": "/s", "minPartitions": "zero"}, "minPartitions"),
    ({"path": "/s", "minPartitions": "0"}, "minPartitions"),
    ({"path": "/s", "mode": "LENIENT"}, "mode"),
    ({"path": "/s", "verifyCrc": "maybe"}, "verifyCrc"),
    ({"path": "/s", "startingOffset": "earliest"}, "startingOffset"),
    ({"path": "/s", "startingOffsets": "{\"T\":{\"x\":1}}"}, "startingOffsets"),
    ({"path": "/s", "endingOffsets": "{bad json"}, "endingOffsets"),
    ({"path": "/s", "startingOffsets": "group:"}, "startingOffsets"),
    ({"path": "/s", "indexHashSlots": "64"}, "indexEntries"),
    ({"path": "/s", "maxBytesPerPartition": "12parsecs"}, "maxBytesPerPartition"),
    ({"path": "/s", "startingTimestamp": "yesterday"}, "startingTimestamp"),
    ({"path": "/s", "startingTimestamp": "2000", "endingTimestamp": "1000"}, "endingTimestamp"),
    ({"paths": "[\"/a\",\"/b\"]", "brokerNames": "only-one"}, "brokerNames"),
    ({}, "path"),
]
"""Invalid option sets and the option each error names (also checked on the JVM engine, tests/contract)."""
