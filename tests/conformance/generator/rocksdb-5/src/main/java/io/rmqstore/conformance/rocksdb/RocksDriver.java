package io.rmqstore.conformance.rocksdb;

import io.rmqstore.conformance.FixtureGenerator;
import io.rmqstore.conformance.Oracle;
import io.rmqstore.conformance.Scenario;
import io.rmqstore.conformance.StoreSettings;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.config.v1.RocksDBConsumerOffsetManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.RocksDBMessageStore;
import org.apache.rocketmq.store.StoreType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.queue.ReferredIterator;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * The main scenario written by RocketMQ's RocksDBMessageStore ({@code storeType=defaultRocksDB}): consume queues in
 * the RocksDB {@code consumequeue/}, consumer offsets in the broker's RocksDB {@code config/consumerOffsets/}. Adds
 * to the oracle every consume-queue unit RocketMQ iterates and what getMessage returns from each committed offset.
 */
public final class RocksDriver extends Rmq5Driver {
    private DefaultMessageStore live;

    public static void main(String[] args) {
        RocksDriver driver = new RocksDriver();
        FixtureGenerator.mainShape(driver, "rocksdb", driver::addShapeOracle, args);
    }

    private static MessageStoreConfig rocksConfig(StoreSettings settings) throws Exception {
        MessageStoreConfig config = settings.toConfig();
        config.setStoreType(StoreType.DEFAULT_ROCKSDB.getStoreType());
        return config;
    }

    @Override
    protected DefaultMessageStore newStore(StoreSettings settings) throws Exception {
        live = new RocksDBMessageStore(rocksConfig(settings), new BrokerStatsManager("conformance", true),
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { },
            new BrokerConfig(), new ConcurrentHashMap<>());
        return live;
    }

    private void addShapeOracle(Map<String, Object> oracle, Oracle.Walk walk) throws Exception {
        oracle.put("storeType", StoreType.DEFAULT_ROCKSDB.getStoreType());
        oracle.put("rocksdb", List.of("consumequeue", "config/consumerOffsets"));
        TreeMap<String, TreeSet<Integer>> queues = new TreeMap<>();
        walk.records().forEach(d -> queues.computeIfAbsent(d.stored().getTopic(), t -> new TreeSet<>())
            .add(d.stored().getQueueId()));
        List<Map<String, Object>> units = new ArrayList<>();
        queues.forEach((topic, ids) -> ids.forEach(id -> units.add(queueUnits(topic, id))));
        oracle.put("consumeQueueUnits", units);
        Map<String, Object> backlog = new TreeMap<>();
        Scenario.consumerOffsets().forEach((topicAtGroup, offsets) -> {
            String[] tg = topicAtGroup.split("@", 2);
            Map<String, Object> perQueue = new TreeMap<>();
            offsets.forEach((queueId, offset) -> perQueue.put(String.valueOf(queueId),
                pulled(tg[1], tg[0], queueId, offset)));
            backlog.put(topicAtGroup, perQueue);
        });
        oracle.put("backlog", backlog);
    }

    /** ConsumeQueueInterface.iterateFrom(min): [queueOffset, phyOffset, size, tagsCode] per unit. */
    private Map<String, Object> queueUnits(String topic, int queueId) {
        ConsumeQueueInterface cq = live.getConsumeQueue(topic, queueId);
        List<List<Long>> rows = new ArrayList<>();
        ReferredIterator<CqUnit> it = cq.iterateFrom(cq.getMinOffsetInQueue());
        if (it != null) {
            try {
                while (it.hasNext()) {
                    CqUnit u = it.next();
                    rows.add(List.of(u.getQueueOffset(), u.getPos(), (long) u.getSize(), u.getTagsCode()));
                }
            } finally {
                it.release();
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", topic);
        m.put("queueId", queueId);
        m.put("units", rows);
        return m;
    }

    /** Commit-log offsets of what getMessage returns from {@code offset} to the queue's end, in order. */
    private List<Long> pulled(String group, String topic, int queueId, long offset) {
        List<Long> out = new ArrayList<>();
        long next = offset;
        while (true) {
            GetMessageResult r = live.getMessage(group, topic, queueId, next, 32, null);
            if (r == null || r.getMessageBufferList().isEmpty()) {
                if (r != null) {
                    r.release();
                }
                return out;
            }
            try {
                for (ByteBuffer b : r.getMessageBufferList()) {
                    MessageExt m = MessageDecoder.decode(b.slice(), false, false);
                    out.add(m.getCommitLogOffset());
                }
                next = r.getNextBeginOffset();
            } finally {
                r.release();
            }
        }
    }

    /** The 5.x broker's RocksDBConsumerOffsetManager, persisted to the store's config/consumerOffsets/ RocksDB. */
    @Override
    public void persistConsumerOffsets(Path storeRoot, Map<String, Map<Integer, Long>> offsetTable) {
        MessageStoreConfig config = new MessageStoreConfig();
        config.setStorePathRootDir(storeRoot.toString());
        config.setStoreType(StoreType.DEFAULT_ROCKSDB.getStoreType());
        BrokerController controller = new BrokerController(new BrokerConfig(), new NettyServerConfig(),
            new NettyClientConfig(), config);
        RocksDBConsumerOffsetManager manager = new RocksDBConsumerOffsetManager(controller);
        if (!manager.load()) {
            throw new IllegalStateException("RocksDBConsumerOffsetManager.load() failed under " + storeRoot);
        }
        offsetTable.forEach((k, v) -> manager.getOffsetTable().put(k, new ConcurrentHashMap<>(v)));
        manager.persist();
        manager.stop();
    }
}
