package io.rmqstore.conformance;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
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
    private long clockShift;
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
        writeOldTransactions();
        writeHalfTransactions();
        writeRetry();
        writeSendBack();
        writeHashEdges();
        writeClockStepBack();
        if (driver.supportsLongTopics()) {
            put(message(LONG_TOPIC, 0, "TagLong", "long-topic-key", text("long topic body")));
        }
        writeHotKeys();
        put(message("TopicTest", 3, "TagEnd", "last-key", text("last record")));
    }

    /**
     * A short scenario for the 5.2+ `__CRC32#` store: plain, unicode, empty properties, batch, IPv6, and an empty
     * compressed body (a 3.x-path ROLLBACK, in TopicTxn).
     */
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
        PutOutcome prepared = put(prepared("crc-rollback-zstd", CompressionType.ZSTD,
            CompressionType.ZSTD.getCompressionFlag()));
        endOldTransaction(prepared, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE);
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
            put(delayed(m, level));
        }
    }

    /** Sets the delay level; where the store does not (5.x) moves the message like HookUtils.transformDelayLevelMessage. */
    private MessageExt delayed(MessageExt m, int level) {
        m.setDelayTimeLevel(level);
        if (!driver.storeRewritesDelay()) {
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_REAL_TOPIC, m.getTopic());
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_REAL_QUEUE_ID, String.valueOf(m.getQueueId()));
            m.setTopic("SCHEDULE_TOPIC_XXXX");
            m.setQueueId(level - 1);
        }
        return m;
    }

    /**
     * The end-transaction path of RocketMQ 3.x (EndTransactionProcessor before half topics): the producer's PREPARED
     * record sits in its real topic; the broker looks it up (lookMessageByOffset: sysFlag and body as stored, so
     * compression bits and compressed body included) and puts it again as COMMIT, or as ROLLBACK with the body
     * dropped ({@code msgInner.setBody(null)}): a ROLLBACK of a compressed message is an empty body whose sysFlag
     * still says compressed. Uncompressed commit and rollback, a rollback per compression type and for the
     * legacy flag (COMPRESSED_FLAG without type bits), and a compressed commit.
     */
    private void writeOldTransactions() throws Exception {
        endOldTransaction(put(prepared("txn-commit", null, 0)), MessageSysFlag.TRANSACTION_COMMIT_TYPE);
        endOldTransaction(put(prepared("txn-rollback", null, 0)), MessageSysFlag.TRANSACTION_ROLLBACK_TYPE);
        for (CompressionType type : CompressionType.values()) {
            PutOutcome p = put(prepared("txn-rollback-" + type.name().toLowerCase(), type, type.getCompressionFlag()));
            endOldTransaction(p, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE);
        }
        PutOutcome legacy = put(prepared("txn-rollback-legacy", CompressionType.ZLIB, 0));
        endOldTransaction(legacy, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE);
        PutOutcome zipped = put(prepared("txn-commit-lz4", CompressionType.LZ4, CompressionType.LZ4.getCompressionFlag()));
        endOldTransaction(zipped, MessageSysFlag.TRANSACTION_COMMIT_TYPE);
    }

    /** A 3.x producer's PREPARED record in TopicTxn, its body compressed with {@code type} (null: not compressed). */
    private MessageExt prepared(String key, CompressionType type, int typeBits) throws Exception {
        byte[] body = text(key + " prepared body ".repeat(type == null ? 1 : 20));
        MessageExt m = message("TopicTxn", 0, "TagTxn", key, body);
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_TRANSACTION_PREPARED, "true");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_PRODUCER_GROUP, "txn-group");
        if (type != null) {
            m.setBody(CompressorFactory.getCompressor(type).compress(body, 5));
            m.setSysFlag(m.getSysFlag() | MessageSysFlag.COMPRESSED_FLAG | typeBits);
        }
        m.setSysFlag(MessageSysFlag.resetTransactionValue(m.getSysFlag(), MessageSysFlag.TRANSACTION_PREPARED_TYPE));
        return m;
    }

    /**
     * 3.x EndTransactionProcessor: endMessageTransaction copies the stored record (its properties string is taken
     * before WAIT / DELAY are touched, so the stored properties are the prepared record's), then sysFlag gets the
     * end type, preparedTransactionOffset the prepared record's offset, and a ROLLBACK loses its body.
     */
    private void endOldTransaction(PutOutcome prepared, int type) throws Exception {
        MessageExt stored = driver.lookMessageByOffset(prepared.wroteOffset());
        MessageExt end = copyOf(stored, stored.getTopic(), stored.getQueueId());
        end.setSysFlag(MessageSysFlag.resetTransactionValue(stored.getSysFlag(), type));
        end.setPreparedTransactionOffset(prepared.wroteOffset());
        if (type == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE) {
            end.setBody(null);
        }
        put(end);
    }

    /**
     * The current path (4.x/5.x TransactionalMessageBridge.parseHalfMessageInner): the half message goes to
     * RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC / REAL_QID (and 5.x's __transactionId__), transaction type
     * reset to NOT_TYPE. Commit: EndTransactionProcessor.endMessageTransaction puts the looked-up half message into
     * its real topic as COMMIT (properties string taken before REAL_TOPIC / REAL_QID are cleared, body and compression
     * bits as stored), then an op record (tag "d", body the half's queue offset) marks the half done; a rollback
     * writes only the op record. One compressed half committed, one plain half rolled back.
     */
    private void writeHalfTransactions() throws Exception {
        byte[] body = text("half message body ".repeat(30));
        MessageExt half = halfMessage("txn-half", CompressorFactory.getCompressor(CompressionType.ZSTD).compress(body, 5));
        half.setSysFlag(half.getSysFlag() | MessageSysFlag.COMPRESSED_FLAG | CompressionType.ZSTD.getCompressionFlag());
        PutOutcome committed = put(half);
        MessageExt stored = driver.lookMessageByOffset(committed.wroteOffset());
        MessageExt commit = copyOf(stored, stored.getProperty(MessageConst.PROPERTY_REAL_TOPIC),
            Integer.parseInt(stored.getProperty(MessageConst.PROPERTY_REAL_QUEUE_ID)));
        commit.setSysFlag(MessageSysFlag.resetTransactionValue(stored.getSysFlag(), MessageSysFlag.TRANSACTION_COMMIT_TYPE));
        commit.setPreparedTransactionOffset(committed.wroteOffset());
        put(commit);
        put(opRecord(committed.queueOffset()));
        PutOutcome rolledBack = put(halfMessage("txn-half-rollback", text("half message rolled back")));
        put(opRecord(rolledBack.queueOffset()));
    }

    private MessageExt halfMessage(String key, byte[] body) {
        MessageExt half = message("RMQ_SYS_TRANS_HALF_TOPIC", 0, "TagTxn", key, body);
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_TRANSACTION_PREPARED, "true");
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_PRODUCER_GROUP, "txn-group");
        MessageAccessor.putProperty(half, "__transactionId__",
            half.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_REAL_TOPIC, "TopicTxn");
        MessageAccessor.putProperty(half, MessageConst.PROPERTY_REAL_QUEUE_ID, "0");
        return half;
    }

    private MessageExt opRecord(long halfQueueOffset) {
        MessageExt op = message("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, "d", null, text(String.valueOf(halfQueueOffset)));
        op.getProperties().remove(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        return op;
    }

    /** A broker-side re-put of a stored record: header, body, sysFlag and every stored property kept. */
    private MessageExt copyOf(MessageExt stored, String topic, int queueId) {
        MessageExt m = driver.newMessage();
        m.setTopic(topic);
        m.setQueueId(queueId);
        m.setBody(stored.getBody());
        m.setFlag(stored.getFlag());
        m.setSysFlag(stored.getSysFlag());
        m.setBornHost(stored.getBornHost());
        m.setStoreHost(stored.getStoreHost());
        m.setReconsumeTimes(stored.getReconsumeTimes());
        m.setBornTimestamp(stored.getBornTimestamp());
        MessageAccessor.setProperties(m, new HashMap<>(stored.getProperties()));
        return m;
    }

    private void writeRetry() throws Exception {
        MessageExt m = message("%RETRY%consumer-group", 0, "TagA", "retry-key", text("retry body"));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_RETRY_TOPIC, "TopicTest");
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, "7F00000100002A9F0000000000000000");
        m.setReconsumeTimes(2);
        put(m);
    }

    /**
     * Consumer send-back of a compressed record (SendMessageProcessor.asyncConsumerSendMsgBack): the looked-up record
     * is re-put with its body and sysFlag (compression bits) as stored, RETRY_TOPIC, ORIGIN_MESSAGE_ID (its
     * offsetMsgId), WAIT=false and reconsumeTimes + 1: below maxReconsumeTimes (16) to %RETRY%group with delay level
     * 3 + reconsumeTimes (so into SCHEDULE_TOPIC_XXXX), at 16 to %DLQ%group queue 0.
     */
    private void writeSendBack() throws Exception {
        for (int reconsumeTimes : new int[] {0, 16}) {
            byte[] body = text(("sent back after " + reconsumeTimes + " ").repeat(40));
            MessageExt m = message("TopicZip", 1, "TagBack", "back-" + reconsumeTimes,
                CompressorFactory.getCompressor(CompressionType.ZLIB).compress(body, 5));
            m.setSysFlag(MessageSysFlag.COMPRESSED_FLAG | CompressionType.ZLIB.getCompressionFlag());
            m.setReconsumeTimes(reconsumeTimes);
            MessageExt stored = driver.lookMessageByOffset(put(m).wroteOffset());
            boolean dlq = reconsumeTimes >= 16;
            MessageExt back = copyOf(stored, (dlq ? "%DLQ%" : "%RETRY%") + "consumer-group", 0);
            MessageAccessor.putProperty(back, MessageConst.PROPERTY_RETRY_TOPIC, stored.getTopic());
            MessageAccessor.putProperty(back, MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "false");
            MessageAccessor.putProperty(back, MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, stored.getMsgId());
            back.setReconsumeTimes(stored.getReconsumeTimes() + 1);
            put(dlq ? back : delayed(back, 3 + stored.getReconsumeTimes()));
        }
    }

    /**
     * Keys whose {@code "TopicHash#" + key} String.hashCode is 0, Integer.MIN_VALUE (Math.abs stays negative, so
     * IndexFile.indexKeyHashMethod stores 0 like for hash 0), and h / -h (same absolute value): each pair shares
     * slot and stored hash, so only the read-back comparison tells them apart.
     */
    private void writeHashEdges() throws Exception {
        Object[][] keys = {{"zero-258405tap", 0}, {"min-144450Lre", Integer.MIN_VALUE}, {"plus-h", -677864069},
            {"minus-648293bqi", 677864069}};
        for (Object[] k : keys) {
            if (("TopicHash#" + k[0]).hashCode() != (int) k[1]) {
                throw new IllegalStateException("TopicHash#" + k[0] + " does not hash to " + k[1]);
            }
            put(message("TopicHash", 0, "TagHash", (String) k[0], text("hash edge " + k[1])));
        }
    }

    /**
     * The broker's clock steps back an hour (an NTP correction) for three puts: store times go below earlier ones
     * and below the current index file's begin timestamp (IndexFile.putKey stores a time diff of 0 then).
     */
    private void writeClockStepBack() throws Exception {
        clockShift = -3_600_000L;
        for (int i = 0; i < 3; i++) {
            put(message("TopicTest", 1, "TagClock", "clock-back-" + i, text("clock stepped back " + i)));
        }
        clockShift = 0;
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

    /**
     * Puts one message or batch at the next store time (shifted while the clock is stepped back), born 250 ms
     * earlier unless it is a re-put that keeps its born time; fails on anything but PUT_OK.
     */
    private PutOutcome put(MessageExt m) throws Exception {
        long storeTime = BASE_TIME + STEP_MILLIS * step++ + clockShift;
        clock.set(storeTime);
        if (m.getBornTimestamp() == 0) {
            m.setBornTimestamp(storeTime - 250);
        }
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
