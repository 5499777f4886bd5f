package io.rmqstore.conformance.broker5;

import io.rmqstore.conformance.FixtureGenerator;
import io.rmqstore.conformance.Oracle;
import io.rmqstore.conformance.StoreSettings;
import io.rmqstore.conformance.common.FileTrees;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageUtil;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The reference store of a message's whole life {@code <out>/rmq-5.5.0-life/} (§9.3): the loopback cluster of
 * {@link BrokerFixture} with message trace, the timer wheel, short delay levels and fast transaction checks; traced
 * producers (plain and transactional) and three traced push consumer groups (all consumed, one held on a message,
 * one retried into its DLQ). Everything is awaited in the store or through the broker, then RocketMQ's answers are
 * taken while all clients are online ({@link LifeOracle}), then clients and broker shut down cleanly.
 */
public final class LifeFixture {
    static final String NAME = "rmq-5.5.0-life";
    static final String GROUP_ALL = "life-all";
    static final String GROUP_HOLD = "life-hold";
    static final String GROUP_RETRY = "life-retry";
    static final String HALF_TOPIC = TransactionalMessageUtil.buildHalfTopic();
    static final String OP_HALF_TOPIC = TransactionalMessageUtil.buildOpTopic();
    static final String TRACE_TOPIC = TopicValidator.RMQ_SYS_TRACE_TOPIC;
    static final int TIMER_LOG_FILE_SIZE = 8192;
    static final int TIMER_MAX_DELAY_SEC = 3600;
    /**
     * Ends of transaction are written as op records within 200 ms (the broker batches them, by default every 3 s);
     * a half message still without one two seconds after its birth is checked (every three seconds): only tx-check.
     */
    static final int TRANSACTION_OP_BATCH_MILLIS = 200;
    static final long TRANSACTION_TIMEOUT_MILLIS = 2_000;
    static final long TRANSACTION_CHECK_INTERVAL_MILLIS = 3_000;
    static final long SETTLE_TIMEOUT_MILLIS = 60_000;
    static final long REBALANCE_MILLIS = 1_000;

    private LifeFixture() {
    }

    /** {@code <fixtures output directory>}; exits the JVM (broker and held consumer threads are not daemons). */
    public static void main(String[] args) {
        // the clients' RebalanceService reads it once; every 20 s by default, a retry queue routed after a
        // consumer started would wait that long to be pulled
        System.setProperty("rocketmq.client.rebalance.waitInterval", String.valueOf(REBALANCE_MILLIS));
        BrokerFixture.run(args, NAME, LifeFixture::generate);
    }

    static void generate(Path dir) throws Exception {
        long began = System.currentTimeMillis();
        FileTrees.delete(dir);
        Path storeRoot = dir.resolve("store");
        Path work = Files.createTempDirectory("rmq-life-work");
        StoreSettings settings = new StoreSettings(storeRoot, BrokerFixture.COMMIT_LOG_SEGMENT,
            BrokerFixture.CONSUME_QUEUE_SEGMENT, BrokerFixture.HASH_SLOTS, BrokerFixture.INDEX_ENTRIES, false);
        MessageStoreConfig storeConfig = settings.toConfig();
        storeConfig.setMessageDelayLevel(LifeScenario.DELAY_LEVELS);
        storeConfig.setTimerWheelEnable(true);
        storeConfig.setMappedFileSizeTimerLog(TIMER_LOG_FILE_SIZE);
        storeConfig.setTimerMaxDelaySec(TIMER_MAX_DELAY_SEC);
        LoopbackCluster cluster = LoopbackCluster.start(storeConfig, work, broker -> {
            broker.setTraceTopicEnable(true);
            broker.setTransactionOpBatchInterval(TRANSACTION_OP_BATCH_MILLIS);
            broker.setTransactionTimeOut(TRANSACTION_TIMEOUT_MILLIS);
            broker.setTransactionCheckInterval(TRANSACTION_CHECK_INTERVAL_MILLIS);
        });
        try {
            Map<String, Object> oracle = runAndAsk(cluster, settings);
            cluster.shutdown();
            oracle.put("consumerOffsets", FixtureGenerator.sorted(cluster.broker().getConsumerOffsetManager()
                .getOffsetTable()));
            // 7 days of one-second slots x 2 x 32 bytes (TimerMessageStore.TIMER_WHEEL_TTL_DAY, whatever the config):
            // 38.7 MB of a derived index; the timer records themselves are in the commit log and timerlog/.
            Files.delete(storeRoot.resolve("timerwheel"));
            oracle.put("recoveredMaxPhyOffset", FixtureGenerator.recoverCopy(new Rmq5Driver(), storeRoot, settings));
            oracle.put("abortPresent", Files.exists(storeRoot.resolve("abort")));
            FixtureGenerator.write(dir.resolve("oracle.json"), oracle);
        } finally {
            FileTrees.delete(work);
        }
        System.out.println("life fixture written under " + dir + " in " + (System.currentTimeMillis() - began)
            + " ms");
    }

    private static Map<String, Object> runAndAsk(LoopbackCluster cluster, StoreSettings settings) throws Exception {
        Rmq5Driver store = Rmq5Driver.attachedTo(cluster.store());
        DefaultMQAdminExt admin = cluster.client(new DefaultMQAdminExt("life-admin"), "life-admin");
        DefaultMQProducer producer = cluster.client(new DefaultMQProducer("life-producer", true, null),
            "life-producer");
        TransactionMQProducer txProducer = cluster.client(new TransactionMQProducer(null, "life-tx-producer", null,
            true, null), "life-tx-producer");
        LifeScenario scenario = new LifeScenario(producer, txProducer, store);
        List<LifeConsumer> consumers = List.of(
            new LifeConsumer(cluster, GROUP_ALL, LifeConsumer.Behaviour.ALL,
                List.of(LifeScenario.TOPIC, LifeScenario.TX_TOPIC)),
            new LifeConsumer(cluster, GROUP_HOLD, LifeConsumer.Behaviour.HOLD, List.of(LifeScenario.TOPIC)),
            new LifeConsumer(cluster, GROUP_RETRY, LifeConsumer.Behaviour.RETRY, List.of(LifeScenario.TOPIC)));
        admin.start();
        try {
            BrokerFixture.createTopics(admin, cluster, Map.of(LifeScenario.TOPIC, LifeScenario.QUEUES,
                LifeScenario.TX_TOPIC, 1));
            for (LifeConsumer c : consumers) {
                c.start();
            }
            // the broker creates each group's retry topic on its first heartbeat; routed now, not at the next
            // periodic registration, so every consumer rebalances its retry queue before the first send
            BrokerFixture.awaitRoutes(admin, cluster, consumers.stream().map(c -> MixAll.getRetryTopic(c.group()))
                .toList());
            producer.start();
            txProducer.start();
            scenario.sendAll();
            settle(cluster, store, settings.root(), consumers, scenario);
            store.awaitDispatched();

            Oracle.Walk walk = Oracle.walk(settings.root());
            Map<String, Object> oracle = new LinkedHashMap<>();
            oracle.put("fixture", NAME);
            oracle.put("rocketmqVersion", store.rocketmqVersion());
            oracle.put("writtenBy", "BrokerController + NamesrvController + traced DefaultMQProducer, "
                + "TransactionMQProducer and DefaultMQPushConsumers on 127.0.0.1, wall clock");
            oracle.put("wallClock", true);
            oracle.put("lifecycle", true);
            Map<String, Object> config = settings.describe(store.config());
            config.put("timerWheelEnable", true);
            config.put("mappedFileSizeTimerLog", TIMER_LOG_FILE_SIZE);
            config.put("timerMaxDelaySec", TIMER_MAX_DELAY_SEC);
            config.put("msgTraceTopicName", TRACE_TOPIC);
            config.put("maxReconsumeTimes", 1);
            oracle.put("config", config);
            oracle.put("minPhyOffset", store.minPhyOffset());
            oracle.put("maxPhyOffset", store.maxPhyOffset());
            oracle.put("records", walk.records().stream().map(Oracle::recordJson).toList());
            oracle.put("blanks", walk.blanks());
            oracle.put("queues", FixtureGenerator.queues(store, walk));
            oracle.put("queries", Oracle.queries(store, walk, List.of()));
            List<String> msgIds = new ArrayList<>();
            walk.records().forEach(d -> msgIds.add(d.stored().getMsgId()));
            msgIds.add((String) scenario.sent(walk).get(0).get("msgId")); // a client id, not an offsetMsgId
            msgIds.add("not-a-msg-id");
            oracle.put("msgIdQueries", Oracle.msgIdQueries(store, msgIds));
            oracle.put("sent", scenario.sent(walk));
            LifeOracle life = new LifeOracle(admin);
            oracle.put("consumeStats", life.consumeStats(List.of(GROUP_ALL, GROUP_HOLD, GROUP_RETRY)));
            oracle.put("messageTrack", life.messageTrack(scenario.sent(walk)));
            oracle.put("traceRecords", LifeOracle.traceRecords(walk, TRACE_TOPIC));
            return oracle;
        } finally {
            producer.shutdown();
            txProducer.shutdown();
            consumers.forEach(LifeConsumer::shutdown);
            admin.shutdown();
        }
    }

    /**
     * Waits until every consumer group has consumed what it will (A and C everything, C's poison message in its DLQ,
     * B all but the held message), the broker holds each group's committed offsets, the transaction check has passed
     * every half message, and the trace topic holds one trace context per traced send, end of transaction and
     * listener call begun or returned.
     */
    private static void settle(LoopbackCluster cluster, Rmq5Driver store, Path storeRoot, List<LifeConsumer> consumers,
                               LifeScenario scenario) throws Exception {
        String dlq = MixAll.getDLQTopic(GROUP_RETRY);
        String retry = MixAll.getRetryTopic(GROUP_RETRY);
        LoopbackCluster.await("the poison message in " + dlq, SETTLE_TIMEOUT_MILLIS,
            () -> store.maxOffsetInQueue(dlq, 0) == 1);
        long[] ends = new long[LifeScenario.QUEUES];
        long events = 0;
        for (int q = 0; q < LifeScenario.QUEUES; q++) {
            ends[q] = store.maxOffsetInQueue(LifeScenario.TOPIC, q);
            events += ends[q];
        }
        long payments = store.maxOffsetInQueue(LifeScenario.TX_TOPIC, 0);
        long retries = store.maxOffsetInQueue(retry, 0);
        BrokerController broker = cluster.broker();
        for (LifeConsumer c : consumers) {
            long deliveries = switch (c.group()) {
                case GROUP_ALL -> events + payments;
                case GROUP_RETRY -> events + retries;
                default -> events;
            };
            long returned = c.group().equals(GROUP_HOLD) ? deliveries - 1 : deliveries;
            LoopbackCluster.await("consumption by " + c.group(), SETTLE_TIMEOUT_MILLIS, () -> {
                boolean committed = c.started() == deliveries && c.ended() == returned;
                for (int q = 0; q < LifeScenario.QUEUES; q++) {
                    long expected = c.group().equals(GROUP_HOLD) && q == LifeScenario.HOLD_QUEUE ? 0 : ends[q];
                    committed &= broker.getConsumerOffsetManager().queryOffset(c.group(), LifeScenario.TOPIC, q)
                        == expected;
                }
                if (c.group().equals(GROUP_ALL)) {
                    committed &= broker.getConsumerOffsetManager().queryOffset(c.group(), LifeScenario.TX_TOPIC, 0)
                        == payments;
                }
                long retried = c.group().equals(GROUP_RETRY) ? retries : 0;
                committed &= broker.getConsumerOffsetManager().queryOffset(c.group(),
                    MixAll.getRetryTopic(c.group()), 0) == retried;
                return committed;
            });
        }
        String checker = TransactionalMessageUtil.buildConsumerGroup();
        LoopbackCluster.await("the transaction check past every half message", SETTLE_TIMEOUT_MILLIS,
            () -> broker.getConsumerOffsetManager().queryOffset(checker, HALF_TOPIC, 0)
                == store.maxOffsetInQueue(HALF_TOPIC, 0)
                && broker.getConsumerOffsetManager().queryOffset(checker, OP_HALF_TOPIC, 0)
                == store.maxOffsetInQueue(OP_HALF_TOPIC, 0));
        long contexts = scenario.sends() + scenario.transactionEnds();
        for (LifeConsumer c : consumers) {
            contexts += c.started() + c.ended();
        }
        long expectedContexts = contexts;
        LoopbackCluster.await(expectedContexts + " trace contexts in " + TRACE_TOPIC, SETTLE_TIMEOUT_MILLIS, () -> {
            store.awaitDispatched();
            return LifeOracle.traceRecords(Oracle.walk(storeRoot), TRACE_TOPIC).size() == expectedContexts;
        });
    }
}
