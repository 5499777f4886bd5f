package io.rmqstore.conformance;

import io.rmqstore.conformance.common.FileTrees;
import io.rmqstore.conformance.common.Json;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.store.DefaultMessageStore;

/**
 * Writes the reference stores of one RocketMQ version with its real DefaultMessageStore and records
 * RocketMQ's own answers next to each store:
 * {@code <out>/<name>/store/} + {@code oracle.json}; {@code <name>-crash/} is a copy taken while the store ran
 * (abort present) whose last record is torn; {@code <name>-crc/} (5.2+) has {@code enabledAppendPropCRC=true}.
 */
public final class FixtureGenerator {
    static final int COMMIT_LOG_SEGMENT = 8192;
    static final int CONSUME_QUEUE_SEGMENT = 8 * 20;
    static final int HASH_SLOTS = 16;
    static final int INDEX_ENTRIES = 64;

    private final StoreDriver driver;
    private final Path out;

    public FixtureGenerator(StoreDriver driver, Path out) {
        this.driver = driver;
        this.out = out;
    }

    /** Entry point of the per-version mains: {@code <fixtures dir>}; exits the JVM (store threads are not daemons). */
    public static void main(StoreDriver driver, String[] args) {
        int status = 0;
        try {
            run(driver, args);
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    /** A store shape's own answers, added to the oracle while the store still runs (after the main scenario). */
    public interface ShapeOracle {
        void addTo(Map<String, Object> oracle, Oracle.Walk walk) throws Exception;
    }

    static void run(StoreDriver driver, String[] args) throws Exception {
        FixtureGenerator g = new FixtureGenerator(driver, outDir(args));
        String name = "rmq-" + driver.rocketmqVersion();
        g.generate(name, false, true, (oracle, walk) -> { });
        if (driver.supportsPropCrc()) {
            g.generate(name + "-crc", true, false, (oracle, walk) -> { });
        }
        System.out.println("fixtures written for RocketMQ " + driver.rocketmqVersion() + " under " + g.out);
    }

    /**
     * Entry point of a generator of one store shape (the driver configures it): the main scenario into
     * {@code <out>/rmq-<version>-<shape>/}, no crash or CRC copy; exits the JVM like {@link #main}.
     */
    public static void mainShape(StoreDriver driver, String shape, ShapeOracle shapeOracle, String[] args) {
        int status = 0;
        try {
            FixtureGenerator g = new FixtureGenerator(driver, outDir(args));
            g.generate("rmq-" + driver.rocketmqVersion() + "-" + shape, false, false, shapeOracle);
            System.out.println(shape + " fixture written for RocketMQ " + driver.rocketmqVersion() + " under " + g.out);
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    private static Path outDir(String[] args) {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: <fixtures output directory>");
        }
        return Path.of(args[0]).toAbsolutePath();
    }

    private void generate(String name, boolean crcStore, boolean withCrashCopy, ShapeOracle shapeOracle)
        throws Exception {
        Path dir = out.resolve(name);
        Path crashDir = out.resolve(name + "-crash");
        FileTrees.delete(dir);
        FileTrees.delete(crashDir);
        Path storeRoot = dir.resolve("store");
        StoreSettings settings = new StoreSettings(storeRoot, COMMIT_LOG_SEGMENT, CONSUME_QUEUE_SEGMENT, HASH_SLOTS,
            INDEX_ENTRIES, crcStore);
        FixedClock clock = driver.open(settings, Scenario.BASE_TIME);
        Map<String, Object> config = settings.describe(driver.config());
        Scenario scenario = new Scenario(driver, clock);
        if (crcStore) {
            scenario.writeCrc();
        } else {
            scenario.writeMain();
        }
        driver.awaitDispatched();
        if (withCrashCopy) {
            FileTrees.copy(storeRoot, crashDir.resolve("store"));
        }

        Oracle.Walk walk = Oracle.walk(storeRoot);
        checkWalkMatchesPuts(walk, scenario.outcomes());
        Map<String, Object> oracle = new LinkedHashMap<>();
        oracle.put("fixture", name);
        oracle.put("rocketmqVersion", driver.rocketmqVersion());
        oracle.put("config", config);
        oracle.put("minPhyOffset", driver.minPhyOffset());
        oracle.put("maxPhyOffset", driver.maxPhyOffset());
        oracle.put("records", walk.records().stream().map(Oracle::recordJson).toList());
        oracle.put("blanks", walk.blanks());
        oracle.put("queues", queues(driver, walk));
        oracle.put("queries", Oracle.queries(driver, walk, extraProbes()));
        oracle.put("msgIdQueries", Oracle.msgIdQueries(driver, msgIdProbes(walk)));
        shapeOracle.addTo(oracle, walk);
        driver.shutdown();

        Map<String, Map<Integer, Long>> offsets = Scenario.consumerOffsets();
        driver.persistConsumerOffsets(storeRoot, offsets);
        oracle.put("consumerOffsets", sorted(offsets));
        oracle.put("recoveredMaxPhyOffset", recoverCopy(driver, storeRoot, settings));
        oracle.put("abortPresent", Files.exists(storeRoot.resolve("abort")));
        write(dir.resolve("oracle.json"), oracle);

        if (withCrashCopy) {
            writeCrashCopy(name, crashDir, settings, walk, config);
        }
    }

    /** Oracle section (c): tear the crash copy's last record, let RocketMQ recover a throw-away copy of it. */
    private void writeCrashCopy(String name, Path crashDir, StoreSettings settings, Oracle.Walk walk,
        Map<String, Object> config) throws Exception {
        Path crashRoot = crashDir.resolve("store");
        Oracle.Decoded last = walk.records().get(walk.records().size() - 1);
        int size = last.stored().getStoreSize();
        long segmentBase = last.offset() - last.offset() % settings.commitLogSegment();
        Path segment = crashRoot.resolve("commitlog").resolve(String.format("%020d", segmentBase));
        try (RandomAccessFile f = new RandomAccessFile(segment.toFile(), "rw")) {
            f.seek(last.offset() - segmentBase + size / 2);
            f.write(new byte[size - size / 2]);
        }
        Map<String, Object> oracle = new LinkedHashMap<>();
        oracle.put("fixture", name + "-crash");
        oracle.put("rocketmqVersion", driver.rocketmqVersion());
        oracle.put("config", config);
        oracle.put("recordsFrom", name);
        oracle.put("abortPresent", Files.exists(crashRoot.resolve("abort")));
        oracle.put("tornRecordOffset", last.offset());
        oracle.put("tornRecordSize", size);
        oracle.put("tornFrom", last.offset() + size / 2);
        oracle.put("recoveredMaxPhyOffset", recoverCopy(driver, crashRoot, settings));
        write(crashDir.resolve("oracle.json"), oracle);
    }

    /** RocketMQ's recovered max physical offset; recovery truncates files, so it always runs on a temporary copy. */
    public static long recoverCopy(StoreDriver driver, Path storeRoot, StoreSettings settings) throws Exception {
        return recoverCopy(storeRoot, copy -> driver.recoverMaxPhyOffset(settings.withRoot(copy)));
    }

    /** Recovers the store at a root (a throw-away copy) and answers its max physical offset. */
    @FunctionalInterface
    public interface Recovery {
        long maxPhyOffset(Path root) throws Exception;
    }

    /** {@code recovery}'s answer on a temporary copy of {@code storeRoot}, deleted afterwards. */
    public static long recoverCopy(Path storeRoot, Recovery recovery) throws Exception {
        Path tmp = Files.createTempDirectory("rmq-recover");
        try {
            Path copy = tmp.resolve("store");
            FileTrees.copy(storeRoot, copy);
            return recovery.maxPhyOffset(copy);
        } finally {
            FileTrees.delete(tmp);
        }
    }

    /** Recovery by a store opened on {@code root}: load(), then its max physical offset; the store is shut down. */
    public static long loadedMaxPhyOffset(DefaultMessageStore recovered, Path root) throws Exception {
        if (!recovered.load()) {
            throw new IllegalStateException("recovery load() failed for " + root);
        }
        long max = recovered.getMaxPhyOffset();
        recovered.shutdown();
        return max;
    }

    /** Every put's reported offset is a record start, and every walked record lies inside some put's bytes. */
    private static void checkWalkMatchesPuts(Oracle.Walk walk, List<PutOutcome> outcomes) {
        TreeMap<Long, Long> putRanges = new TreeMap<>();
        outcomes.forEach(o -> putRanges.put(o.wroteOffset(), o.wroteOffset() + o.wroteBytes()));
        TreeSet<Long> starts = new TreeSet<>();
        for (Oracle.Decoded d : walk.records()) {
            starts.add(d.offset());
            Map.Entry<Long, Long> range = putRanges.floorEntry(d.offset());
            if (range == null || d.offset() + d.stored().getStoreSize() > range.getValue()) {
                throw new IllegalStateException("record at " + d.offset() + " was not written by any put");
            }
        }
        for (PutOutcome o : outcomes) {
            if (!starts.contains(o.wroteOffset())) {
                throw new IllegalStateException("put at " + o.wroteOffset() + " not found by the walk");
            }
        }
    }

    /** getMinOffsetInQueue / getMaxOffsetInQueue for every (topic, queueId) the walk saw. */
    public static List<Map<String, Object>> queues(StoreDriver driver, Oracle.Walk walk) {
        TreeMap<String, TreeSet<Integer>> topics = new TreeMap<>();
        walk.records().forEach(d -> topics.computeIfAbsent(d.stored().getTopic(), t -> new TreeSet<>())
            .add(d.stored().getQueueId()));
        List<Map<String, Object>> out = new ArrayList<>();
        topics.forEach((topic, ids) -> ids.forEach(id -> {
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("topic", topic);
            q.put("queueId", id);
            q.put("minOffset", driver.minOffsetInQueue(topic, id));
            q.put("maxOffset", driver.maxOffsetInQueue(topic, id));
            out.add(q);
        }));
        return out;
    }

    static List<String[]> extraProbes() {
        return List.of(new String[] {"TopicTest", "absent-key"}, new String[] {"TopicTest", "a  b"},
            new String[] {"TopicTest", " lead"}, new String[] {"AaTopic", "Aa"}, new String[] {"BBTopic", "BB"},
            new String[] {"TopicTest", "batch-all"}, new String[] {"SCHEDULE_TOPIC_XXXX", "delay-3"},
            new String[] {"TopicTest", "delay-3"}, new String[] {"HotTopic", "hot"});
    }

    /** Every record's offsetMsgId plus ids that are not offsetMsgIds (a UNIQ_KEY, garbage). */
    static List<String> msgIdProbes(Oracle.Walk walk) {
        List<String> ids = new ArrayList<>();
        walk.records().forEach(d -> ids.add(d.stored().getMsgId()));
        ids.add(Scenario.SHARED_UNIQ_KEY);
        ids.add("7F00000100002A9F00000000FFFFFF00");
        ids.add("not-a-msg-id");
        return ids;
    }

    /** A consumer offset table with topics@groups and queue ids in sorted order. */
    public static Map<String, Object> sorted(Map<String, ? extends Map<Integer, Long>> offsets) {
        Map<String, Object> m = new TreeMap<>();
        offsets.forEach((k, v) -> m.put(k, new TreeMap<>(v)));
        return m;
    }

    /** Writes an oracle as deterministic JSON (Json.write). */
    public static void write(Path file, Map<String, Object> oracle) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, Json.write(oracle), StandardCharsets.UTF_8);
    }
}
