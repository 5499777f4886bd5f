#!/usr/bin/env bash
# Regenerates the conformance fixtures with real RocketMQ (4.9.7, 4.9.8, 5.1.4, 5.3.1 and 5.5.0 DefaultMessageStore, and
# 5.3.3 RocksDBMessageStore (RocksDB consume queues and consumer offsets), a 5.4.0 DLedgerCommitLog store, 5.4.0 stores
# in the BatchCQ / LMQ / cqext shapes, the 5.3.3 LMQ store with its consumer offsets in the v2 config storage (config/rdb), and
# a 5.5.0 name server + broker + producer on 127.0.0.1, and the same cluster with traced producers and consumers, retries,
# delays, timers and transactions: the life fixture) into a temporary directory and checks them against
# tests/conformance/fixtures (compare_fixtures.py rules: byte-equal for the fixed-clock fixtures, semantic for
# the wall-clock broker and life fixtures).
#   tests/conformance/regenerate.sh            check (CI)
#   tests/conformance/regenerate.sh --update   replace the committed fixtures with fresh ones
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fixtures="$root/tests/conformance/fixtures"
out="$(mktemp -d "${TMPDIR:-/tmp}/rmq-fixtures.XXXXXX")"
trap 'rm -rf "$out"' EXIT

"$root/.ci/sbt" "conformanceRmq49/run $out" "conformanceRmq497/run $out" "conformanceRmq5/run $out" \
  "conformanceRmq514/run $out" "conformanceRmq531/run $out" "conformanceBroker5/run $out" \
  "conformanceBroker5/runMain io.rmqstore.conformance.broker5.LifeFixture $out" \
  "conformanceRocksdb/run $out" "conformanceDledger/run $out" "conformanceShapes540/run $out" \
  "conformanceRdb/run $out" < /dev/null

if [[ "${1:-}" == "--update" ]]; then
  rm -rf "$fixtures"
  mkdir -p "$fixtures"
  cp -a "$out"/. "$fixtures"/
  echo "fixtures updated in $fixtures"
else
  python3 "$root/tests/conformance/compare_fixtures.py" "$fixtures" "$out"
fi
