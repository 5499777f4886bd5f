package io.rmqstore.conformance.rmq49;

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
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.ConfigManager;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.store.AppendMessageResult;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/** RocketMQ 4.9.x DefaultMessageStore (MessageExtBrokerInner in org.apache.rocketmq.store); built against 4.9.8 and 4.9.7. */
public final class Rmq49Driver implements StoreDriver {
    private DefaultMessageStore store;

    public static void main(String[] args) {
        FixtureGenerator.main(new Rmq49Driver(), args);
    }

    @Override
    public boolean storeRewritesDelay() {
        return true;
    }

    @Override
    public FixedClock open(StoreSettings settings, long initialTime) throws Exception {
        store = newStore(settings.toConfig());
        FixedClock clock = FixedClock.installInto(store, initialTime);
        if (!store.load()) {
            throw new IllegalStateException("DefaultMessageStore.load() failed");
        }
        store.start();
        // The 4.9.x store starts its own ScheduleMessageService, which would deliver the (past-dated) delay
        // records at wall-clock moments; stopping it keeps them in SCHEDULE_TOPIC_XXXX and the store deterministic.
        store.handleScheduleMessageService(BrokerRole.SLAVE);
        return clock;
    }

    private static DefaultMessageStore newStore(MessageStoreConfig config) throws Exception {
        return new DefaultMessageStore(config, new BrokerStatsManager("conformance", true),
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { },
            new BrokerConfig());
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
        PutMessageResult r;
        if (message instanceof MessageExtBatch batch) {
            r = store.putMessages(batch);
        } else {
            MessageExtBrokerInner inner = (MessageExtBrokerInner) message;
            inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(inner.getTags()));
            inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
            r = store.putMessage(inner);
        }
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
        return store.getMaxOffsetInQueue(topic, queueId);
    }

    @Override
    public void shutdown() {
        store.shutdown();
        store = null;
    }

    @Override
    public long recoverMaxPhyOffset(StoreSettings settings) throws Exception {
        return FixtureGenerator.loadedMaxPhyOffset(newStore(settings.toConfig()), settings.root());
    }

    /**
     * rocketmq-broker 4.9.8 is not on Maven Central, so its ConsumerOffsetManager cannot be used; this
     * ConfigManager has the same serialised shape (a fastjson {@code offsetTable} property, RemotingSerializable
     * pretty JSON, ConfigManager.persist with .bak handling) as the 4.9.x broker's.
     */
    @Override
    public void persistConsumerOffsets(Path storeRoot, Map<String, Map<Integer, Long>> offsetTable) {
        OffsetTable manager = new OffsetTable(storeRoot.resolve("config").resolve("consumerOffset.json"));
        offsetTable.forEach((k, v) -> manager.getOffsetTable().put(k, new ConcurrentHashMap<>(v)));
        manager.persist();
    }

    /** Serialises like 4.9.x broker's ConsumerOffsetManager (only its offsetTable is a bean property). */
    public static final class OffsetTable extends ConfigManager {
        private final transient Path path;
        private ConcurrentMap<String, ConcurrentMap<Integer, Long>> offsetTable = new ConcurrentHashMap<>();

        OffsetTable(Path path) {
            this.path = path;
        }

        public ConcurrentMap<String, ConcurrentMap<Integer, Long>> getOffsetTable() {
            return offsetTable;
        }

        public void setOffsetTable(ConcurrentMap<String, ConcurrentMap<Integer, Long>> offsetTable) {
            this.offsetTable = offsetTable;
        }

        @Override
        public String encode() {
            return encode(false);
        }

        @Override
        public String encode(boolean prettyFormat) {
            return RemotingSerializable.toJson(this, prettyFormat);
        }

        @Override
        public String configFilePath() {
            return path.toString();
        }

        @Override
        public void decode(String jsonString) {
            throw new UnsupportedOperationException("write-only");
        }
    }
}
