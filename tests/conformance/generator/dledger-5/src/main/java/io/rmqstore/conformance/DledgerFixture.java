package io.rmqstore.conformance;

import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import io.openmessaging.storage.dledger.store.file.MmapFileList;
import io.rmqstore.conformance.common.FileTrees;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.dledger.DLedgerCommitLog;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * Writes {@code rmq-<version>-dledger}: the main scenario stored by RocketMQ's own {@code DLedgerCommitLog}
 * ({@code enableDLegerCommitLog=true}, a one-node DLedger group on 127.0.0.1), with RocketMQ's answers in
 * oracle.json (docs/format.md §2.13). DLedgerCommitLog takes STORETIMESTAMP from the wall clock, so the
 * fixture is compared semantically ({@code "wallClock": true}).
 */
public final class DledgerFixture {
    static final String SELF_ID = "n0";
    static final String GROUP = "rmqstore";
    /** DLedgerMmapFileStore.INDEX_UNIT_SIZE: one DLedger index entry. */
    static final int INDEX_UNIT = 32;
    /** DLedger index files of 256 entries instead of 5 Mi (DLedgerConfig has no store setting for it). */
    static final int INDEX_FILE_SIZE = INDEX_UNIT * 256;

    private DledgerFixture() {
    }

    public static void main(String[] args) {
        int status = 0;
        try {
            if (args.length != 1) {
                throw new IllegalArgumentException("usage: <fixtures output directory>");
            }
            generate(Path.of(args[0]).toAbsolutePath());
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    static void generate(Path out) throws Exception {
        Rmq5Driver probe = Rmq5Driver.attachedTo(null);
        String name = "rmq-" + probe.rocketmqVersion() + "-dledger";
        Path dir = out.resolve(name);
        FileTrees.delete(dir);
        Path storeRoot = dir.resolve("store");
        StoreSettings settings = new StoreSettings(storeRoot, FixtureGenerator.COMMIT_LOG_SEGMENT,
            FixtureGenerator.CONSUME_QUEUE_SEGMENT, FixtureGenerator.HASH_SLOTS, FixtureGenerator.INDEX_ENTRIES, false);
        DefaultMessageStore store = open(settings);
        FixedClock clock = FixedClock.installInto(store, Scenario.BASE_TIME);
        if (!store.load()) {
            throw new IllegalStateException("DefaultMessageStore.load() failed");
        }
        store.start();
        awaitLeader(store);
        Rmq5Driver driver = Rmq5Driver.attachedTo(store);
        Map<String, Object> config = settings.describe(store.getMessageStoreConfig());
        config.put("enableDLegerCommitLog", true);
        config.put("dLegerSelfId", SELF_ID);
        config.put("mappedFileSizeForEntryIndex", INDEX_FILE_SIZE);
        Scenario scenario = new Scenario(driver, clock);
        scenario.writeMain();
        driver.awaitDispatched();

        Oracle.Walk walk = Oracle.walk(storeRoot.resolve("dledger-" + SELF_ID).resolve("data"), Oracle.Framing.DLEDGER);
        Map<String, Object> oracle = new LinkedHashMap<>();
        oracle.put("fixture", name);
        oracle.put("rocketmqVersion", probe.rocketmqVersion());
        oracle.put("writtenBy", "DLedgerCommitLog, enableDLegerCommitLog=true, one-node group on 127.0.0.1, wall clock");
        oracle.put("wallClock", true);
        oracle.put("dledger", true);
        oracle.put("config", config);
        oracle.put("minPhyOffset", driver.minPhyOffset());
        oracle.put("maxPhyOffset", driver.maxPhyOffset());
        oracle.put("records", walk.records().stream().map(Oracle::recordJson).toList());
        oracle.put("blanks", walk.blanks());
        oracle.put("queues", FixtureGenerator.queues(driver, walk));
        oracle.put("queries", Oracle.queries(driver, walk, FixtureGenerator.extraProbes()));
        oracle.put("msgIdQueries", Oracle.msgIdQueries(driver, FixtureGenerator.msgIdProbes(walk)));
        driver.shutdown();

        Map<String, Map<Integer, Long>> offsets = Scenario.consumerOffsets();
        driver.persistConsumerOffsets(storeRoot, offsets);
        oracle.put("consumerOffsets", FixtureGenerator.sorted(offsets));
        oracle.put("recoveredMaxPhyOffset", FixtureGenerator.recoverCopy(storeRoot,
            copy -> FixtureGenerator.loadedMaxPhyOffset(open(settings.withRoot(copy)), copy)));
        oracle.put("abortPresent", Files.exists(storeRoot.resolve("abort")));
        oracle.put("admin", new LinkedHashMap<String, Object>()); // no broker: no mqadmin answers (compare_fixtures)
        FixtureGenerator.write(dir.resolve("oracle.json"), oracle);
        System.out.println("DLedger fixture written for RocketMQ " + probe.rocketmqVersion() + " under " + dir);
    }

    /** A DefaultMessageStore whose commit log is a DLedgerCommitLog of a one-node group, with small DLedger files. */
    static DefaultMessageStore open(StoreSettings settings) throws Exception {
        MessageStoreConfig c = settings.toConfig();
        c.setEnableDLegerCommitLog(true);
        c.setdLegerGroup(GROUP);
        c.setdLegerSelfId(SELF_ID);
        c.setdLegerPeers(SELF_ID + "-127.0.0.1:" + freeLoopbackPort());
        DefaultMessageStore store = new DefaultMessageStore(c, new BrokerStatsManager("conformance", true),
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { },
            new BrokerConfig(), new ConcurrentHashMap<>());
        MmapFileList index = dledgerStore(store).getIndexFileList();
        Field size = MmapFileList.class.getDeclaredField("mappedFileSize");
        size.setAccessible(true);
        size.setInt(index, INDEX_FILE_SIZE);
        return store;
    }

    static DLedgerMmapFileStore dledgerStore(DefaultMessageStore store) {
        return (DLedgerMmapFileStore) ((DLedgerCommitLog) store.getCommitLog()).getdLedgerServer().getdLedgerStore();
    }

    /** A one-node group elects itself after its election timeout; puts fail until then. */
    static void awaitLeader(DefaultMessageStore store) throws InterruptedException {
        DLedgerCommitLog log = (DLedgerCommitLog) store.getCommitLog();
        long deadline = System.currentTimeMillis() + 60_000;
        while (!log.getdLedgerServer().getMemberState().isLeader()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the one-node DLedger group elected no leader");
            }
            Thread.sleep(10);
        }
    }

    private static int freeLoopbackPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
