package io.rmqstore.conformance.broker5;

import io.rmqstore.conformance.FixtureGenerator;
import io.rmqstore.conformance.Oracle;
import io.rmqstore.conformance.StoreSettings;
import io.rmqstore.conformance.common.FileTrees;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The end-to-end reference store {@code <out>/rmq-5.5.0-broker/}: a real name server + broker in this JVM on
 * loopback (§9.3), a DefaultMQProducer sending over the network, a clean BrokerController.shutdown(). Times,
 * hosts (ports) and client ids come from the wall clock and the network, so this fixture is compared semantically
 * (compare_fixtures.py); its oracle.json has the sections of the DefaultMessageStore fixtures (decoded with
 * MessageDecoder, queried on the broker's own store while it runs) plus {@code admin}: the same questions asked
 * through DefaultMQAdminExt like mqadmin does.
 */
public final class BrokerFixture {
    static final String NAME = "rmq-5.5.0-broker";
    static final int COMMIT_LOG_SEGMENT = 8192;
    static final int CONSUME_QUEUE_SEGMENT = 8 * 20;
    static final int HASH_SLOTS = 32;
    static final int INDEX_ENTRIES = 128;
    static final String CONSUMER_GROUP = "conformance-group";
    static final long DELIVERY_TIMEOUT_MILLIS = 20_000;
    static final long ROUTE_TIMEOUT_MILLIS = 10_000;

    private BrokerFixture() {
    }

    /** {@code <fixtures output directory>}; exits the JVM (broker threads are not daemons). */
    public static void main(String[] args) {
        run(args, NAME, BrokerFixture::generate);
    }

    /** Writes one fixture into its directory. */
    interface Writer {
        void generate(Path dir) throws Exception;
    }

    /** A fixture's main: {@code args} = the fixtures output directory; writes {@code name} there, exits the JVM. */
    static void run(String[] args, String name, Writer writer) {
        int status = 0;
        try {
            if (args.length != 1) {
                throw new IllegalArgumentException("usage: <fixtures output directory>");
            }
            writer.generate(Path.of(args[0]).toAbsolutePath().resolve(name));
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    static void generate(Path dir) throws Exception {
        FileTrees.delete(dir);
        Path storeRoot = dir.resolve("store");
        Path work = Files.createTempDirectory("rmq-broker-work");
        StoreSettings settings = new StoreSettings(storeRoot, COMMIT_LOG_SEGMENT, CONSUME_QUEUE_SEGMENT, HASH_SLOTS,
            INDEX_ENTRIES, false);
        MessageStoreConfig storeConfig = settings.toConfig();
        // The timer wheel (timerwheel/, timerlog/: tens of MB) serves timer messages only; delay levels do not need it.
        storeConfig.setTimerWheelEnable(false);
        LoopbackCluster cluster = LoopbackCluster.start(storeConfig, work);
        try {
            Map<String, Object> oracle = runAndAsk(cluster, settings);
            cluster.shutdown();
            Map<String, Object> offsets = FixtureGenerator.sorted(cluster.broker().getConsumerOffsetManager()
                .getOffsetTable());
            oracle.put("consumerOffsets", offsets);
            Rmq5Driver recoverer = new Rmq5Driver();
            oracle.put("recoveredMaxPhyOffset", FixtureGenerator.recoverCopy(recoverer, storeRoot, settings));
            oracle.put("abortPresent", Files.exists(storeRoot.resolve("abort")));
            FixtureGenerator.write(dir.resolve("oracle.json"), oracle);
        } finally {
            FileTrees.delete(work);
        }
        System.out.println("broker fixture written under " + dir);
    }

    /** Produces, waits for the delayed delivery and dispatch, and records RocketMQ's answers (broker still up). */
    private static Map<String, Object> runAndAsk(LoopbackCluster cluster, StoreSettings settings) throws Exception {
        Rmq5Driver store = Rmq5Driver.attachedTo(cluster.store());
        DefaultMQProducer producer = cluster.client(new DefaultMQProducer("conformance-producer"),
            "conformance-producer");
        DefaultMQAdminExt admin = cluster.client(new DefaultMQAdminExt("conformance-admin"), "conformance-admin");
        producer.start();
        admin.start();
        try {
            createTopics(admin, cluster);
            BrokerScenario scenario = new BrokerScenario(producer);
            scenario.sendAll();
            store.awaitDispatched();
            long realQueueEnd = store.maxOffsetInQueue(BrokerScenario.TOPIC, BrokerScenario.DELIVERED_QUEUE_ID);
            scenario.sendDelivered();
            awaitDelivery(store, realQueueEnd);
            store.awaitDispatched();

            Oracle.Walk walk = Oracle.walk(settings.root());
            checkWalkHasEverySend(walk, scenario.results());
            Map<String, Object> oracle = new LinkedHashMap<>();
            oracle.put("fixture", NAME);
            oracle.put("rocketmqVersion", store.rocketmqVersion());
            oracle.put("writtenBy", "BrokerController + NamesrvController + DefaultMQProducer on 127.0.0.1, wall clock");
            oracle.put("wallClock", true);
            oracle.put("config", settings.describe(store.config()));
            oracle.put("minPhyOffset", store.minPhyOffset());
            oracle.put("maxPhyOffset", store.maxPhyOffset());
            oracle.put("records", walk.records().stream().map(Oracle::recordJson).toList());
            oracle.put("blanks", walk.blanks());
            oracle.put("queues", FixtureGenerator.queues(store, walk));
            List<String> msgIds = msgIdProbes(walk, scenario.sharedUniqKey());
            awaitRoutes(admin, cluster, AdminOracle.topicsAsked(walk, keyProbes()));
            oracle.put("admin", new AdminOracle(admin).answers(walk, keyProbes(), msgIds));
            oracle.put("queries", Oracle.queries(store, walk, keyProbes()));
            oracle.put("msgIdQueries", Oracle.msgIdQueries(store, msgIds));
            commitConsumerOffsets(admin, cluster.brokerAddr());
            return oracle;
        } finally {
            producer.shutdown();
            admin.shutdown();
        }
    }

    /**
     * Waits until ScheduleMessageService has put the delay-level-1 message back into its real queue (the only write
     * after the last send; the send itself went to SCHEDULE_TOPIC_XXXX).
     */
    private static void awaitDelivery(Rmq5Driver store, long realQueueEnd) throws Exception {
        LoopbackCluster.await("delivery of the delay-level-" + BrokerScenario.DELIVERED_DELAY_LEVEL + " message",
            DELIVERY_TIMEOUT_MILLIS,
            () -> store.maxOffsetInQueue(BrokerScenario.TOPIC, BrokerScenario.DELIVERED_QUEUE_ID) > realQueueEnd);
    }

    /** Every SendResult's offsetMsgId (one per record, comma-joined for batches) names a walked record. */
    static void checkWalkHasEverySend(Oracle.Walk walk, List<SendResult> results) {
        Set<String> walked = new HashSet<>();
        walk.records().forEach(d -> walked.add(d.stored().getMsgId()));
        for (SendResult r : results) {
            for (String id : r.getOffsetMsgId().split(",")) {
                if (!walked.contains(id)) {
                    throw new IllegalStateException("sent record " + id + " not found in the commit log");
                }
            }
        }
    }

    /** mqadmin updateTopic for the scenario's topics, then waits until the name server routes them. */
    private static void createTopics(DefaultMQAdminExt admin, LoopbackCluster cluster) throws Exception {
        createTopics(admin, cluster, Map.of(BrokerScenario.TOPIC, BrokerScenario.QUEUES, BrokerScenario.HOT_TOPIC,
            BrokerScenario.QUEUES));
    }

    /** mqadmin updateTopic for every topic (name -> queue count), then waits until the name server routes them. */
    static void createTopics(DefaultMQAdminExt admin, LoopbackCluster cluster, Map<String, Integer> queues)
        throws Exception {
        for (Map.Entry<String, Integer> topic : queues.entrySet()) {
            admin.createAndUpdateTopicConfig(cluster.brokerAddr(), new TopicConfig(topic.getKey(), topic.getValue(),
                topic.getValue(), PermName.PERM_READ | PermName.PERM_WRITE));
        }
        awaitRoutes(admin, cluster, queues.keySet());
    }

    /**
     * Registers the broker's current topic configs with the name server (what its periodic registerBrokerAll does)
     * until the name server routes every one of {@code topics}, so the admin answers do not depend on when that
     * periodic task last ran.
     */
    static void awaitRoutes(DefaultMQAdminExt admin, LoopbackCluster cluster, Collection<String> topics)
        throws InterruptedException {
        long deadline = System.currentTimeMillis() + ROUTE_TIMEOUT_MILLIS;
        cluster.broker().registerBrokerAll(true, false, true);
        for (String topic : topics) {
            while (!routed(admin, topic)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("no route for " + topic + " after " + ROUTE_TIMEOUT_MILLIS + " ms");
                }
                Thread.sleep(50);
                cluster.broker().registerBrokerAll(true, false, true);
            }
        }
    }

    private static boolean routed(DefaultMQAdminExt admin, String topic) throws InterruptedException {
        try {
            return !admin.examineTopicRouteInfo(topic).getQueueDatas().isEmpty();
        } catch (MQClientException | RemotingException e) {
            return false;
        }
    }

    /** Offsets a consumer group committed through the broker (persisted to config/consumerOffset.json on shutdown). */
    private static void commitConsumerOffsets(DefaultMQAdminExt admin, String brokerAddr) throws Exception {
        SubscriptionGroupConfig group = new SubscriptionGroupConfig();
        group.setGroupName(CONSUMER_GROUP);
        admin.createAndUpdateSubscriptionGroupConfig(brokerAddr, group);
        admin.updateConsumeOffset(brokerAddr, CONSUMER_GROUP,
            new MessageQueue(BrokerScenario.TOPIC, LoopbackCluster.BROKER_NAME, 0), 3);
        admin.updateConsumeOffset(brokerAddr, CONSUMER_GROUP,
            new MessageQueue(BrokerScenario.TOPIC, LoopbackCluster.BROKER_NAME, 2), 1);
        admin.updateConsumeOffset(brokerAddr, CONSUMER_GROUP,
            new MessageQueue(BrokerScenario.HOT_TOPIC, LoopbackCluster.BROKER_NAME, 0), 64);
    }

    private static List<String[]> keyProbes() {
        return List.of(new String[] {BrokerScenario.TOPIC, "absent-key"}, new String[] {BrokerScenario.TOPIC, "a  b"},
            new String[] {BrokerScenario.TOPIC, " lead"}, new String[] {BrokerScenario.TOPIC, "k1 k2"},
            new String[] {"SCHEDULE_TOPIC_XXXX", "delay-1"}, new String[] {BrokerScenario.HOT_TOPIC, "order-1"});
    }

    /** Every record's offsetMsgId, a client id (UNIQ_KEY, mqadmin falls back to it) and a malformed id. */
    private static List<String> msgIdProbes(Oracle.Walk walk, String sharedUniqKey) {
        List<String> ids = new ArrayList<>();
        walk.records().forEach(d -> ids.add(d.stored().getMsgId()));
        ids.add(sharedUniqKey);
        ids.add("not-a-msg-id");
        return ids;
    }
}
