package io.rmqstore.conformance.rmq5;

import io.rmqstore.conformance.FixedClock;
import io.rmqstore.conformance.FixtureGenerator;
import io.rmqstore.conformance.Oracle;
import io.rmqstore.conformance.PutOutcome;
import io.rmqstore.conformance.StoreDriver;
import io.rmqstore.conformance.StoreSettings;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.AppendMessageResult;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * RocketMQ 5.x DefaultMessageStore (MessageExtBrokerInner in org.apache.rocketmq.common.message); built against 5.5.0,
 * 5.3.1 and 5.1.4. Subclasses change the store's kind (newStore) and where consumer offsets go (RocksDB driver).
 */
public class Rmq5Driver implements StoreDriver {
    private DefaultMessageStore store;

    public static void main(String[] args) {
        FixtureGenerator.main(new Rmq5Driver(), args);
    }

    /** A driver over a store that a running BrokerController owns (open/put/shutdown are then not used). */
    public static Rmq5Driver attachedTo(DefaultMessageStore brokerStore) {
        Rmq5Driver driver = new Rmq5Driver();
        driver.store = brokerStore;
        return driver;
    }

    @Override
    public boolean storeRewritesDelay() {
        return false;
    }

    @Override
    public FixedClock open(StoreSettings settings, long initialTime) throws Exception {
        store = newStore(settings);
        FixedClock clock = FixedClock.installInto(store, initialTime);
        if (!store.load()) {
            throw new IllegalStateException("DefaultMessageStore.load() failed");
        }
        store.start();
        return clock;
    }

    /** A store that is not loaded yet; the fixed clock is installed before load(). */
    protected DefaultMessageStore newStore(StoreSettings settings) throws Exception {
        return new DefaultMessageStore(settings.toConfig(), new BrokerStatsManager("conformance", true),
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { },
            new BrokerConfig(), new ConcurrentHashMap<>());
    }

    @Override
    public MessageExt newMessage() {
        return new MessageExtBrokerInner();
    }

    @Override
    public MessageExt newBatch() {
        return new MessageExtBatch();
    }

    @Override
    public PutOutcome put(MessageExt message) {
        MessageExtBrokerInner inner = (MessageExtBrokerInner) message;
        inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(inner.getTags()));
        inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
        PutMessageResult r = inner instanceof MessageExtBatch batch ? store.putMessages(batch) : store.putMessage(inner);
        AppendMessageResult a = r.getAppendMessageResult();
        if (a == null) {
            return new PutOutcome(r.getPutMessageStatus().name(), -1, 0, 0, null, -1);
        }
        return new PutOutcome(r.getPutMessageStatus().name(), a.getWroteOffset(), a.getWroteBytes(), a.getMsgNum(),
            a.getMsgId(), a.getLogicsOffset());
    }

    @Override
    public void awaitDispatched() throws InterruptedException {
        while (store.dispatchBehindBytes() != 0) {
            Thread.sleep(1);
        }
    }

    @Override
    public List<Long> indexQueryOffsets(String topic, String key, int maxNum, long begin, long end) throws Exception {
        return Oracle.indexQueryOffsets(store, topic, key, maxNum, begin, end);
    }

    @Override
    public List<Long> queryMessage(String topic, String key, int maxNum, long begin, long end) {
        return Oracle.offsetsOf(store.queryMessage(topic, key, maxNum, begin, end));
    }

    @Override
    public MessageStoreConfig config() {
        return store.getMessageStoreConfig();
    }

    @Override
    public MessageExt lookMessageByOffset(long offset) {
        return store.lookMessageByOffset(offset);
    }

    @Override
    public long minPhyOffset() {
        return store.getMinPhyOffset();
    }

    @Override
    public long maxPhyOffset() {
        return store.getMaxPhyOffset();
    }

    @Override
    public long minOffsetInQueue(String topic, int queueId) {
        return store.getMinOffsetInQueue(topic, queueId);
    }

    @Override
    public long maxOffsetInQueue(String topic, int queueId) {
        try {
            return store.getMaxOffsetInQueue(topic, queueId);
        } catch (Exception e) { // ConsumeQueueException, which 5.3.1 does not declare
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void shutdown() {
        store.shutdown();
        store = null;
    }

    @Override
    public long recoverMaxPhyOffset(StoreSettings settings) throws Exception {
        return FixtureGenerator.loadedMaxPhyOffset(newStore(settings), settings.root());
    }

    /** The 5.x broker's own ConsumerOffsetManager, persisted to the store's config/consumerOffset.json. */
    @Override
    public void persistConsumerOffsets(Path storeRoot, Map<String, Map<Integer, Long>> offsetTable) {
        Path file = storeRoot.resolve("config").resolve("consumerOffset.json");
        ConsumerOffsetManager manager = new ConsumerOffsetManager() {
            @Override
            public String configFilePath() {
                return file.toString();
            }
        };
        offsetTable.forEach((k, v) -> manager.getOffsetTable().put(k, new ConcurrentHashMap<>(v)));
        manager.persist();
    }
}
