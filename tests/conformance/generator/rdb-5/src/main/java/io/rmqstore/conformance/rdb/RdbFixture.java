package io.rmqstore.conformance.rdb;

import io.rmqstore.conformance.FixtureGenerator;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import io.rmqstore.conformance.shapes.ShapesFixtures;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.config.ConfigManagerVersion;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * The LMQ shape fixture ({@link ShapesFixtures#lmq}) with its consumer offsets in the v2 config storage
 * ({@code configManagerVersion=v2}, RocketMQ 5.3.2+; docs/format.md §4.8): committed through the broker's
 * {@code ConsumerOffsetManagerV2} into the RocksDB {@code config/rdb/} (LMQ offsets only there), next to pull
 * offsets, a topic and a subscription group in the same database, over a {@code consumerOffset.json} with older
 * offsets that the broker left before it switched to v2 (v2's load never reads it). The oracle's
 * {@code consumerOffsets} are what a v2 broker loaded afterwards answers; {@code staleConsumerOffsets} the JSON's.
 */
public final class RdbFixture extends ShapesFixtures {
    private static final String CLIENT = "10.0.0.7:52100";

    private RdbFixture(Path out) {
        super(out);
    }

    public static void main(String[] args) {
        run(args, RdbFixture::new, (g, version) -> g.lmq("rmq-" + version + "-rdb"));
    }

    /** A broker on the v2 config storage of the store at {@code root}, with access to that storage. */
    private static final class V2Broker extends BrokerController {
        V2Broker(Path root) {
            super(v2(), new NettyServerConfig(), new NettyClientConfig(), storeConfig(root));
        }

        private static BrokerConfig v2() {
            BrokerConfig config = new BrokerConfig();
            config.setConfigManagerVersion(ConfigManagerVersion.V2.getVersion());
            return config;
        }

        private static MessageStoreConfig storeConfig(Path root) {
            MessageStoreConfig config = new MessageStoreConfig();
            config.setStorePathRootDir(root.toString());
            return config;
        }

        /** BrokerController.initializeMetadata: starts the config storage, every manager loads from it. */
        V2Broker load() {
            if (!initializeMetadata()) {
                throw new IllegalStateException("BrokerController.initializeMetadata() failed (config/rdb)");
            }
            return this;
        }

        /** The managers' persist (flush of the storage's WAL) and the storage's shutdown, as BrokerController does. */
        void shutdownConfig() {
            getTopicConfigManager().persist();
            getSubscriptionGroupManager().persist();
            getConsumerOffsetManager().persist();
            configStorage.shutdown();
        }
    }

    @Override
    protected void persistConsumerOffsets(Path root, Map<String, Map<Integer, Long>> offsets,
        Map<String, Object> oracle) throws Exception {
        Map<String, Map<Integer, Long>> stale = new TreeMap<>();
        offsets.forEach((key, queues) -> queues.forEach((queueId, offset) ->
            stale.computeIfAbsent(key, k -> new TreeMap<>()).put(queueId, offset - 1)));
        Rmq5Driver.attachedTo(null).persistConsumerOffsets(root, stale); // a v1 broker's, before the switch

        V2Broker broker = new V2Broker(root).load();
        ConsumerOffsetManager manager = broker.getConsumerOffsetManager();
        new TreeMap<>(offsets).forEach((key, queues) -> new TreeMap<>(queues).forEach((queueId, offset) -> {
            String[] topicGroup = key.split("@", 2);
            manager.commitOffset(CLIENT, topicGroup[1], topicGroup[0], queueId, offset);
            manager.commitPullOffset(CLIENT, topicGroup[1], topicGroup[0], queueId, offset + 1);
        }));
        broker.getTopicConfigManager().updateTopicConfig(new TopicConfig(LMQ_TOPIC, 2, 2));
        SubscriptionGroupConfig group = new SubscriptionGroupConfig();
        group.setGroupName(GROUP);
        broker.getSubscriptionGroupManager().updateSubscriptionGroupConfig(group);
        broker.shutdownConfig();

        oracle.put("configManagerVersion", ConfigManagerVersion.V2.getVersion());
        oracle.put("rocksdb", List.of("config/rdb"));
        oracle.put("consumerOffsets", loadedOffsets(root, offsets));
        oracle.put("staleConsumerOffsets", FixtureGenerator.sorted(stale));
    }

    /**
     * What ConsumerOffsetManagerV2 of a broker started on the store answers: its loaded offset table (no LMQ
     * offsets, load skips them) and queryOffset, which reads LMQ offsets from the database, for the LMQ ones.
     */
    private static Map<String, Object> loadedOffsets(Path root, Map<String, Map<Integer, Long>> committed) {
        V2Broker broker = new V2Broker(root).load();
        ConsumerOffsetManager manager = broker.getConsumerOffsetManager();
        Map<String, Map<Integer, Long>> answer = new TreeMap<>(manager.getOffsetTable());
        committed.forEach((key, queues) -> {
            String[] topicGroup = key.split("@", 2);
            if (MixAll.isLmq(topicGroup[0])) {
                Map<Integer, Long> lmq = new TreeMap<>();
                queues.keySet().forEach(q -> lmq.put(q, manager.queryOffset(topicGroup[1], topicGroup[0], q)));
                answer.put(key, lmq);
            }
        });
        broker.shutdownConfig();
        return FixtureGenerator.sorted(answer);
    }
}
