package io.rmqstore.conformance;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;

/**
 * The deterministic message sequence written into every reference store. Each put gets its own store
 * time (BASE_TIME + 1.5 s per put) through the fixed clock; born time is 250 ms earlier.
 */
public final class Scenario {
    public static final long BASE_TIME = 1_700_000_000_000L;
    static final long STEP_MILLIS = 1_500L;
    static final int HOT_COUNT = 70;
    static final int SHARED_UNIQ_COUNT = 35;
    public static final String SHARED_UNIQ_KEY = "0A0000070DAC1B6D3586FFFFFFFF0001";
    static final String LONG_TOPIC = "%RETRY%" + "GroupWithAVeryLongName".repeat(7);

    static final InetSocketAddress BORN_V4 = host("10.0.0.7", 52100);
    static final InetSocketAddress STORE_V4 = host("127.0.0.1", 10911);
    static final InetSocketAddress BORN_V6 = host("2001:db8::7", 52101);
    static final InetSocketAddress STORE_V6 = host("::1", 10911);

    private final StoreDriver driver;
    private final FixedClock clock;
    private final List<PutOutcome> outcomes = new ArrayList<>();
    private int step;
    private int uniqCounter;

    public Scenario(StoreDriver driver, FixedClock clock) {
        this.driver = driver;
        this.clock = clock;
    }

    public List<PutOutcome> outcomes() {
        return outcomes;
    }

    /** The full scenario for a version's main store. */
    public void writeMain() throws Exception {
        writePlain();
        writeCollisions();
        writeCompressed();
        writeHosts();
        writeBatch("TopicTest", 1, 5);
        writeDelayed();
        writeTransactions();
        writeRetry();
        if (driver.supportsLongTopics()) {
            put(message(LONG_TOPIC, 0, "TagLong", "long-topic-key", text("long topic body")));
        }
        writeHotKeys();
        put(message("TopicTest", 3, "TagEnd", "last-key", text("last record")));
    }

    /** A short scenario for the 5.x `__CRC32#` store: plain, unicode, empty properties, batch, IPv6. */
    public void writeCrc() throws Exception {
        put(message("TopicCrc", 0, "TagA", "crc-1", text("crc body 1")));
        put(message("TopicCrc", 0, "Tägü", "crc-ключ 😀", text("crc body unicode")));
        MessageExt bare = driver.newMessage();
        fillHeader(bare, "TopicCrc", 1);
        bare.setBody(text("no properties at all"));
        put(bare);
        MessageExt v6 = message("TopicCrc", 1, null, "crc-v6", text("crc v6"));
        v6.setBornHost(BORN_V6);
        v6.setStoreHost(STORE_V6);
        put(v6);
        writeBatch("TopicCrc", 2, 3);
        put(message("TopicCrc", 0, "TagEnd", "crc-last", text("crc last")));
    }

    private void writePlain() throws Exception {
        String[] keys = {"order-1", "k1 k2", "a  b", " lead", "trail ", " both  ends ", "dup dup", "ключ",
            "键 😀 𝄞", "Aa", "BB", "", null, "order-1 order-2"};
        String[] tags = {"TagA", "TagB||TagC", null, "标签", "TagA"};
        for (int i = 0; i < 28; i++) {
            byte[] body = switch (i % 7) {
                case 3 -> new byte[0];
                case 5 -> binary(1500 + i);
                case 6 -> binary(256);
                default -> text("hello " + i + " ünïcödé 😀");
            };
            MessageExt m = message("TopicTest", i % 4, tags[i % tags.length], keys[i % keys.length], body);
            m.setFlag(i % 5 == 0 ? 0 : (i % 5 == 1 ? -1 : i));
            m.setReconsumeTimes(i % 9 == 4 ? 3 : 0);
            if (i % 3 == 0) {
                MessageAccessor.putProperty(m, "color", "blue");
                MessageAccessor.putProperty(m, "unicode", "値😀\u00e9");
            }
            if (i % 6 == 2) {
                m.getProperties().remove(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            }
            put(m);
        }
    }

    /** "AaTopic#BB" and "BBTopic#Aa" have the same Java hashCode (Aa/BB blocks), so do "TopicTest#Aa"/"#BB". */
    private void writeCollisions() throws Exception {
        if ("AaTopic#BB".hashCode() != "BBTopic#Aa".hashCode()) {
            throw new IllegalStateException("collision keys do not collide");
        }
        put(message("AaTopic", 0, "TagA", "BB", text("AaTopic with key BB")));
        put(message("BBTopic", 0, "TagA", "Aa", text("BBTopic with key Aa")));
        put(message("AaTopic", 0, "TagA", "Aa", text("AaTopic with key Aa")));
    }

    /** Bodies compressed with RocketMQ's own compressors, flagged like DefaultMQProducerImpl.tryToCompressMessage. */
    private void writeCompressed() throws Exception {
        byte[] body = text("compressible body line. ".repeat(250));
        for (CompressionType type : CompressionType.values()) {
            MessageExt m = message("TopicZip", 0, "Zip" + type.name(), "zip-" + type.name().toLowerCase(), body);
            m.setBody(CompressorFactory.getCompressor(type).compress(body, 5));
            m.setSysFlag(m.getSysFlag() | MessageSysFlag.COMPRESSED_FLAG | type.getCompressionFlag());
            put(m);
        }
        MessageExt legacy = message("TopicZip", 0, "ZipLegacy", "zip-legacy", body);
        legacy.setBody(CompressorFactory.getCompressor(CompressionType.ZLIB).compress(body, 5));
        legacy.setSysFlag(legacy.getSysFlag() | MessageSysFlag.COMPRESSED_FLAG);
        put(legacy);
    }

    private void writeHosts() throws Exception {
        InetSocketAddress[][] pairs = {{BORN_V6, STORE_V4}, {BORN_V4, STORE_V6}, {BORN_V6, STORE_V6}};
        for (int i = 0; i < pairs.length; i++) {
            MessageExt m = message("TopicV6", 0, "TagV6", "v6-" + i, text("ipv6 body " + i));
            m.setBornHost(pairs[i][0]);
            m.setStoreHost(pairs[i][1]);
            put(m);
        }
    }

    /** A producer batch (MessageBatch encoding, §2.11) with batch-level WAIT/CLUSTER/UNIQ_KEY like a 5.x client. */
    private void writeBatch(String topic, int queueId, int size) throws Exception {
        List<Message> inner = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            Message m = new Message(topic, "TagBatch", "batch-k" + i + " batch-all", text("batch body " + i));
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, nextUniqKey());
            inner.add(m);
        }
        MessageExt batch = driver.newBatch();
        fillHeader(batch, topic, queueId);
        batch.setBody(MessageDecoder.encodeMessages(inner));
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_CLUSTER, "DefaultCluster");
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, nextUniqKey());
        put(batch);
    }

    /** Delay levels 3 and 18: stored in SCHEDULE_TOPIC_XXXX (level 18 = 2 h, never delivered while generating). */
    private void writeDelayed() throws Exception {
        for (int level : new int[] {3, 18}) {
            MessageExt m = message("TopicTest", 2, "TagDelay", "delay-" + level, text("delayed " + level));
            m.setDelayTimeLevel(level);
            if (!driver.storeRewritesDelay()) {
                MessageAccessor.putProperty(m, MessageConst.PROPERTY_REAL_TOPIC, m.getTopic());
                MessageAccessor.putProperty(m, MessageConst.PROPERTY_REAL_QUEUE_ID, String.valueOf(m.getQueueId()));
                m.setTopic("SCHEDULE_TOPIC_XXXX");
                m.setQueueId(level - 1);
            }
            put(m);
        }
    }

    /** Old-style PREPARED/COMMIT/ROLLBACK typed records plus a modern half message and its op record. */
    private void writeTransactions() throws Exception {
        PutOutcome prepared = put(transactional("txn-commit", MessageSysFlag.TRANSACTION_PREPARED_TYPE, 0));
        put(transactional("txn-commit", MessageSysFlag.TRANSACTION_COMMIT_TYPE, prepared.wroteOffset()));
        PutOutcome prepared2 = put(transactional("txn-rollback", MessageSysFlag.TRANSACTION_PREPARED_TYPE, 0));
        put(transactional("txn-rollback", MessageSysFlag.TRANSACTION_ROLLBACK_TYPE, prepared2.wroteOffset()));

        MessageExt half = message("RMQ_SYS_TRANS_HALF_TOPIC", 0, "TagTxn", "txn-half", text("half message"));
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_TRANSACTION_PREPARED, "true");
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_PRODUCER_GROUP, "txn-group");
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_REAL_TOPIC, "TopicTxn");
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_REAL_QUEUE_ID, "0");
        PutOutcome halfOutcome = put(half);
        MessageExt op = message("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, "d", null,
            text(String.valueOf(halfOutcome.queueOffset())));
        op.getProperties().remove(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        put(op);
    }

    private MessageExt transactional(String key, int type, long preparedOffset) {
        MessageExt m = message("TopicTxn", 0, "TagTxn", key, text(key + " type " + type));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_TRANSACTION_PREPARED, "true");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_PRODUCER_GROUP, "txn-group");
        m.setSysFlag(MessageSysFlag.resetTransactionValue(m.getSysFlag(), type));
        m.setPreparedTransactionOffset(preparedOffset);
        return m;
    }

    private void writeRetry() throws Exception {
        MessageExt m = message("%RETRY%consumer-group", 0, "TagA", "retry-key", text("retry body"));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_RETRY_TOPIC, "TopicTest");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, "7F00000100002A9F0000000000000000");
        m.setReconsumeTimes(2);
        put(m);
    }

    /** More records with key "hot" than the 64 cap, and more sharing one UNIQ_KEY than the 32 cap. */
    private void writeHotKeys() throws Exception {
        for (int i = 0; i < HOT_COUNT; i++) {
            MessageExt m = message("HotTopic", i % 2, null, "hot hot-" + (i % 3), text("h" + i));
            if (i < SHARED_UNIQ_COUNT) {
                MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, SHARED_UNIQ_KEY);
            }
            put(m);
        }
    }

    private MessageExt message(String topic, int queueId, String tags, String keys, byte[] body) {
        MessageExt m = driver.newMessage();
        fillHeader(m, topic, queueId);
        m.setBody(body);
        if (tags != null) {
            m.setTags(tags);
        }
        if (keys != null) {
            m.setKeys(keys);
        }
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, nextUniqKey());
        return m;
    }

    private void fillHeader(MessageExt m, String topic, int queueId) {
        m.setTopic(topic);
        m.setQueueId(queueId);
        m.setBornHost(BORN_V4);
        m.setStoreHost(STORE_V4);
        m.setSysFlag(0);
    }

    /** Puts one message or batch at the next store time; fails on anything but PUT_OK. */
    private PutOutcome put(MessageExt m) throws Exception {
        long storeTime = BASE_TIME + STEP_MILLIS * step++;
        clock.set(storeTime);
        m.setBornTimestamp(storeTime - 250);
        PutOutcome outcome = driver.put(m);
        if (!"PUT_OK".equals(outcome.status())) {
            throw new IllegalStateException("put " + m.getTopic() + " failed: " + outcome);
        }
        driver.awaitDispatched();
        Thread.sleep(2); // index file names are wall-clock ms: never create two in the same ms
        outcomes.add(outcome);
        return outcome;
    }

    /** A UNIQ_KEY shaped like MessageClientIDSetter's (ip 10.0.0.7, pid, classloader hash, time, counter). */
    private String nextUniqKey() {
        int n = uniqCounter++;
        return String.format("0A000007%04X%08X%08X%04X", 0x0DAC, 0x1B6D3586, n * 1500, n & 0xFFFF);
    }

    private static byte[] text(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] binary(int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        return b;
    }

    private static InetSocketAddress host(String ip, int port) {
        return new InetSocketAddress(ip, port);
    }

    /** Consumer offsets written to config/consumerOffset.json: next queue offsets per topic@group. */
    public static Map<String, Map<Integer, Long>> consumerOffsets() {
        return Map.of(
            "TopicTest@group-a", Map.of(0, 3L, 1, 5L, 2, 0L, 3, 7L),
            "HotTopic@group-b", Map.of(0, 35L, 1, 35L),
            "%RETRY%group-a@group-a", Map.of(0, 0L));
    }
}
