package io.rmqstore.conformance.shapes;

import io.rmqstore.conformance.FixedClock;
import io.rmqstore.conformance.FixtureGenerator;
import io.rmqstore.conformance.Oracle;
import io.rmqstore.conformance.Scenario;
import io.rmqstore.conformance.StoreDriver;
import io.rmqstore.conformance.common.FileTrees;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * Stores in the shapes a 5.x broker writes when configured away from the default (docs/format.md §4.4-§4.6),
 * each written by RocketMQ's own DefaultMessageStore with tiny file sizes, next to RocketMQ's answers:
 * {@code rmq-<v>-batchcq} (topic attribute queue.type=BatchCQ, inner-batch records as the broker's
 * SendMessageProcessor puts them), {@code rmq-<v>-lmq} (enableLmq + enableMultiDispatch, INNER_MULTI_DISPATCH)
 * and {@code rmq-<v>-cqext} (enableConsumeQueueExt). The oracle has the sections of the main fixtures plus
 * {@code backlogs}: getMessage from every committed consumer offset to the queue's end.
 */
public class ShapesFixtures {
    static final String BATCH_TOPIC = "TopicBatch";
    protected static final String LMQ_TOPIC = "TopicLmq";
    static final String EXT_TOPIC = "TopicExt";
    protected static final String GROUP = "shape-group";
    static final InetSocketAddress BORN = new InetSocketAddress("10.0.0.7", 52100);
    static final InetSocketAddress STORE = new InetSocketAddress("127.0.0.1", 10911);

    private final Path out;
    private DefaultMessageStore store;
    private FixedClock clock;
    private int step;
    private Map<String, TopicConfig> topics;

    protected ShapesFixtures(Path out) {
        this.out = out;
    }

    public static void main(String[] args) {
        run(args, ShapesFixtures::new, (g, version) -> {
            g.batchCq("rmq-" + version + "-batchcq");
            g.lmq("rmq-" + version + "-lmq");
            g.cqExt("rmq-" + version + "-cqext");
        });
    }

    /** What a generator main writes with its generator, named after the linked RocketMQ release. */
    @FunctionalInterface
    protected interface Fixtures<G extends ShapesFixtures> {
        void write(G generator, String version) throws Exception;
    }

    /** Runs {@code fixtures} with a generator over {@code <fixtures output directory>}; exits the JVM. */
    protected static <G extends ShapesFixtures> void run(String[] args, Function<Path, G> generator,
        Fixtures<G> fixtures) {
        int status = 0;
        try {
            if (args.length != 1) {
                throw new IllegalArgumentException("usage: <fixtures output directory>");
            }
            Path out = Path.of(args[0]).toAbsolutePath();
            String version = Rmq5Driver.attachedTo(null).rocketmqVersion();
            fixtures.write(generator.apply(out), version);
            System.out.println("shape fixtures written for RocketMQ " + version + " under " + out);
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    private static MessageStoreConfig config(Path root) throws java.io.IOException {
        MessageStoreConfig c = new MessageStoreConfig();
        c.setStorePathRootDir(root.toString());
        c.setStorePathCommitLog(root.resolve("commitlog").toString());
        c.setMappedFileSizeCommitLog(4096);
        c.setMappedFileSizeConsumeQueue(8 * 20);
        c.setMapperFileSizeBatchConsumeQueue(4 * 46);
        c.setMappedFileSizeConsumeQueueExt(128);
        c.setBitMapLengthConsumeQueueExt(8);
        c.setMaxHashSlotNum(16);
        c.setMaxIndexNum(64);
        c.setFlushDiskType(FlushDiskType.SYNC_FLUSH);
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            c.setHaListenPort(s.getLocalPort());
        }
        return c;
    }

    /** A BatchCQ topic (2 queues) with inner batches of 1 to 5 messages and single messages, plus a plain topic. */
    private void batchCq(String name) throws Exception {
        Path root = begin(name);
        TopicConfig batch = new TopicConfig(BATCH_TOPIC, 2, 2);
        batch.setAttributes(Map.of("queue.type", "BatchCQ"));
        open(root, config(root), Map.of(BATCH_TOPIC, batch));
        int[] sizes = {3, 1, 5, 2, 4, 1, 3, 5, 2, 2, 4, 3};
        for (int i = 0; i < sizes.length; i++) {
            if (i % 4 == 3) {
                put(message(BATCH_TOPIC, i % 2, "TagS", "single-" + i, "single " + i));
            } else {
                putInnerBatch(BATCH_TOPIC, i % 2, sizes[i], i);
            }
            put(message("TopicPlain", 0, "TagP", "plain-" + i, "plain " + i));
        }
        Map<String, Map<Integer, Long>> offsets = Map.of(BATCH_TOPIC + "@" + GROUP, Map.of(0, 4L, 1, 5L),
            "TopicPlain@" + GROUP, Map.of(0, 5L));
        finish(name, root, offsets);
    }

    /** Records of TopicLmq dispatched also to one or two %LMQ% queues (queue id 0 there), and a plain topic. */
    protected void lmq(String name) throws Exception {
        Path root = begin(name);
        MessageStoreConfig c = config(root);
        c.setEnableLmq(true);
        c.setEnableMultiDispatch(true);
        open(root, c, Map.of());
        for (int i = 0; i < 14; i++) {
            MessageExtBrokerInner m = message(LMQ_TOPIC, i % 2, i % 3 == 0 ? "TagL" : null, "lmq-" + i, "lmq " + i);
            String queues = i % 3 == 1 ? "%LMQ%q1,%LMQ%q2" : i % 3 == 2 ? "%LMQ%q2" : "%LMQ%q1";
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_INNER_MULTI_DISPATCH, queues);
            put(m);
            if (i % 4 == 0) {
                put(message("TopicPlain", 0, "TagP", "plain-" + i, "plain " + i));
            }
        }
        Map<String, Map<Integer, Long>> offsets = Map.of("%LMQ%q1@" + GROUP, Map.of(0, 3L),
            "%LMQ%q2@" + GROUP, Map.of(0, 7L), LMQ_TOPIC + "@" + GROUP, Map.of(0, 2L, 1, 6L));
        finish(name, root, offsets);
    }

    /** Every consume-queue unit's tagsCode is a ConsumeQueueExt address; ext files roll over; two topics. */
    private void cqExt(String name) throws Exception {
        Path root = begin(name);
        MessageStoreConfig c = config(root);
        c.setEnableConsumeQueueExt(true);
        open(root, c, Map.of());
        for (int i = 0; i < 24; i++) {
            put(message(EXT_TOPIC, i % 2, i % 4 == 3 ? null : "TagX" + i % 3, "ext-" + i, "ext " + i));
            if (i % 6 == 0) {
                put(message("TopicPlain", 0, "TagP", "plain-" + i, "plain " + i));
            }
        }
        finish(name, root, Map.of(EXT_TOPIC + "@" + GROUP, Map.of(0, 3L, 1, 11L)));
    }

    private Path begin(String name) throws Exception {
        Path dir = out.resolve(name);
        FileTrees.delete(dir);
        step = 0;
        return dir.resolve("store");
    }

    private void open(Path root, MessageStoreConfig c, Map<String, TopicConfig> topicConfigs) throws Exception {
        topics = topicConfigs;
        store = newStore(c);
        clock = FixedClock.installInto(store, Scenario.BASE_TIME);
        if (!store.load()) {
            throw new IllegalStateException("DefaultMessageStore.load() failed for " + root);
        }
        store.start();
    }

    private DefaultMessageStore newStore(MessageStoreConfig c) throws Exception {
        return new DefaultMessageStore(c, new BrokerStatsManager("conformance", true),
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { },
            new BrokerConfig(), new ConcurrentHashMap<>(topics));
    }

    private MessageExtBrokerInner message(String topic, int queueId, String tags, String keys, String body) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        fill(m, topic, queueId);
        if (tags != null) {
            m.setTags(tags);
        }
        m.setKeys(keys);
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniqKey());
        m.setBody(body.getBytes(StandardCharsets.UTF_8));
        return m;
    }

    private void fill(MessageExtBrokerInner m, String topic, int queueId) {
        m.setTopic(topic);
        m.setQueueId(queueId);
        m.setBornHost(BORN);
        m.setStoreHost(STORE);
    }

    private String uniqKey() {
        return String.format("0A0000070DAC1B6D3586%012X", 0xE000 + step);
    }

    /**
     * One inner-batch record as SendMessageProcessor.sendBatchMessage puts it for a BatchCQ topic: the encoded
     * messages as body, INNER_BATCH and NEED_UNWRAP sysFlag bits, INNER_NUM; the store adds INNER_BASE.
     */
    private void putInnerBatch(String topic, int queueId, int count, int n) throws Exception {
        List<Message> inner = new ArrayList<>();
        for (int j = 0; j < count; j++) {
            Message m = new Message(topic, "TagB", "batch-" + n + "-" + j, ("inner " + n + "." + j).getBytes(
                StandardCharsets.UTF_8));
            inner.add(m);
        }
        MessageExtBatch batch = new MessageExtBatch();
        fill(batch, topic, queueId);
        batch.setBody(MessageDecoder.encodeMessages(inner));
        batch.setTags("TagB");
        batch.setKeys("batch-" + n);
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniqKey());
        batch.setSysFlag(MessageSysFlag.INNER_BATCH_FLAG | MessageSysFlag.NEED_UNWRAP_FLAG);
        batch.setInnerBatch(true);
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_INNER_NUM, String.valueOf(count));
        put(batch);
    }

    private void put(MessageExtBrokerInner m) {
        long storeTime = Scenario.BASE_TIME + 1500L * step++;
        clock.set(storeTime);
        m.setBornTimestamp(storeTime - 250);
        m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(m.getTags()));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        PutMessageResult r = store.putMessage(m);
        if (!r.isOk()) {
            throw new IllegalStateException("put #" + step + " failed: " + r.getPutMessageStatus());
        }
    }

    /** Oracle sections, consumer offsets through the broker's ConsumerOffsetManager, clean shutdown. */
    private void finish(String name, Path root, Map<String, Map<Integer, Long>> offsets) throws Exception {
        while (store.dispatchBehindBytes() != 0) {
            Thread.sleep(1);
        }
        StoreDriver driver = Rmq5Driver.attachedTo(store);
        Oracle.Walk walk = Oracle.walk(root);
        Map<String, Object> oracle = new LinkedHashMap<>();
        oracle.put("fixture", name);
        oracle.put("rocketmqVersion", driver.rocketmqVersion());
        oracle.put("config", describe(store.getMessageStoreConfig()));
        oracle.put("minPhyOffset", store.getMinPhyOffset());
        oracle.put("maxPhyOffset", store.getMaxPhyOffset());
        oracle.put("records", walk.records().stream().map(Oracle::recordJson).toList());
        oracle.put("blanks", walk.blanks());
        oracle.put("queues", queues(walk, offsets));
        oracle.put("queries", Oracle.queries(driver, walk, List.of()));
        List<String> ids = new ArrayList<>();
        walk.records().forEach(d -> ids.add(d.stored().getMsgId()));
        // ids that name no record: a record's UNIQ_KEY, an offset past the log, not an id at all
        ids.add(walk.records().get(0).stored().getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        ids.add("7F00000100002A9F00000000FFFFFF00");
        ids.add("not-a-msg-id");
        oracle.put("msgIdQueries", Oracle.msgIdQueries(driver, ids));
        oracle.put("backlogs", backlogs(offsets));
        store.shutdown();
        persistConsumerOffsets(root, offsets, oracle);
        oracle.put("recoveredMaxPhyOffset", recoveredMaxPhyOffset(root, store.getMessageStoreConfig()));
        oracle.put("abortPresent", Files.exists(root.resolve("abort")));
        FixtureGenerator.write(root.getParent().resolve("oracle.json"), oracle);
    }

    /**
     * Commits {@code offsets} as the broker's ConsumerOffsetManager persists them (config/consumerOffset.json) and
     * puts into the oracle what it holds ({@code consumerOffsets}); the store is shut down.
     */
    protected void persistConsumerOffsets(Path root, Map<String, Map<Integer, Long>> offsets,
        Map<String, Object> oracle) throws Exception {
        Rmq5Driver.attachedTo(store).persistConsumerOffsets(root, offsets);
        oracle.put("consumerOffsets", FixtureGenerator.sorted(offsets));
    }

    private static Map<String, Object> describe(MessageStoreConfig c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("mappedFileSizeCommitLog", c.getMappedFileSizeCommitLog());
        m.put("mappedFileSizeConsumeQueue", c.getMappedFileSizeConsumeQueue());
        m.put("mapperFileSizeBatchConsumeQueue", c.getMapperFileSizeBatchConsumeQueue());
        m.put("mappedFileSizeConsumeQueueExt", c.getMappedFileSizeConsumeQueueExt());
        m.put("maxHashSlotNum", c.getMaxHashSlotNum());
        m.put("maxIndexNum", c.getMaxIndexNum());
        m.put("maxMsgsNumBatch", c.getMaxMsgsNumBatch());
        m.put("defaultQueryMaxNum", c.getDefaultQueryMaxNum());
        m.put("enableLmq", c.isEnableLmq());
        m.put("enableMultiDispatch", c.isEnableMultiDispatch());
        m.put("enableConsumeQueueExt", c.isEnableConsumeQueueExt());
        return m;
    }

    /** getMinOffsetInQueue / getMaxOffsetInQueue of every queue records went to, incl. LMQ queues. */
    private List<Map<String, Object>> queues(Oracle.Walk walk, Map<String, Map<Integer, Long>> offsets) {
        TreeMap<String, java.util.TreeSet<Integer>> topics = new TreeMap<>();
        walk.records().forEach(d -> {
            topics.computeIfAbsent(d.stored().getTopic(), t -> new java.util.TreeSet<>()).add(d.stored().getQueueId());
            String lmq = d.stored().getProperty(MessageConst.PROPERTY_INNER_MULTI_DISPATCH);
            if (lmq != null) {
                for (String q : lmq.split(",")) {
                    topics.computeIfAbsent(q, t -> new java.util.TreeSet<>()).add(0);
                }
            }
        });
        List<Map<String, Object>> out = new ArrayList<>();
        topics.forEach((topic, ids) -> ids.forEach(id -> {
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("topic", topic);
            q.put("queueId", id);
            q.put("minOffset", store.getMinOffsetInQueue(topic, id));
            try {
                q.put("maxOffset", store.getMaxOffsetInQueue(topic, id));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            out.add(q);
        }));
        return out;
    }

    /**
     * For every committed offset: getMessage from it until the queue's end, as a consumer pulls: the records
     * returned (commit-log offsets, in order), the offsets each pull asked from, and the backlog
     * (getMaxOffsetInQueue - committed offset, in messages).
     */
    private List<Map<String, Object>> backlogs(Map<String, Map<Integer, Long>> offsets) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        for (String topicGroup : new TreeMap<>(offsets).keySet()) {
            String topic = topicGroup.substring(0, topicGroup.indexOf('@'));
            for (Map.Entry<Integer, Long> e : new TreeMap<>(offsets.get(topicGroup)).entrySet()) {
                long max = store.getMaxOffsetInQueue(topic, e.getKey());
                List<Long> returned = new ArrayList<>();
                List<Long> queueOffsets = new ArrayList<>();
                long next = e.getValue();
                while (next < max) {
                    GetMessageResult r = store.getMessage(GROUP, topic, e.getKey(), next, 32, null);
                    if (r.getMessageBufferList().isEmpty()) {
                        throw new IllegalStateException(topic + ":" + e.getKey() + " getMessage(" + next + "): "
                            + r.getStatus());
                    }
                    for (ByteBuffer b : r.getMessageBufferList()) {
                        returned.add(b.getLong(b.position() + 28));
                        queueOffsets.add(b.getLong(b.position() + 20));
                    }
                    next = r.getNextBeginOffset();
                    r.release();
                }
                Map<String, Object> b = new LinkedHashMap<>();
                b.put("topic", topic);
                b.put("queueId", e.getKey());
                b.put("group", GROUP);
                b.put("committedOffset", e.getValue());
                b.put("maxOffset", max);
                b.put("backlog", max - e.getValue());
                b.put("getMessage", returned);
                b.put("getMessageQueueOffsets", queueOffsets);
                out.add(b);
            }
        }
        return out;
    }

    private long recoveredMaxPhyOffset(Path root, MessageStoreConfig c) throws Exception {
        return FixtureGenerator.recoverCopy(root, copy -> {
            MessageStoreConfig cc = config(copy);
            cc.setEnableLmq(c.isEnableLmq());
            cc.setEnableMultiDispatch(c.isEnableMultiDispatch());
            cc.setEnableConsumeQueueExt(c.isEnableConsumeQueueExt());
            return FixtureGenerator.loadedMaxPhyOffset(newStore(cc), copy);
        });
    }
}
