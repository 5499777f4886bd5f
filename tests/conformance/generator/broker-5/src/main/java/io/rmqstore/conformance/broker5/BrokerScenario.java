package io.rmqstore.conformance.broker5;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * What the producer sends, in this order, each send synchronous: queue ids are chosen explicitly (a selector on
 * the queue index, the batch to a given MessageQueue), so topics, queue ids, queue offsets, record sizes and
 * commit-log offsets do not depend on the client's random queue rotation. Only times, hosts and client ids do.
 */
final class BrokerScenario {
    static final String TOPIC = "TopicE2E";
    static final String HOT_TOPIC = "TopicHot";
    static final int QUEUES = 4;
    /** 64 = maxMsgsNumBatch (key query cap), 32 = defaultQueryMaxNum (unique-key query cap). */
    static final int HOT_KEY_COUNT = 70;
    static final int SHARED_UNIQ_COUNT = 35;
    /** Delay level 1 (1 s) is delivered back to TopicE2E before shutdown; level 18 (2 h) stays scheduled. */
    static final int DELIVERED_DELAY_LEVEL = 1;
    static final int PENDING_DELAY_LEVEL = 18;
    static final int DELIVERED_QUEUE_ID = 1;

    private static final MessageQueueSelector BY_QUEUE_ID = (queues, message, queueId) -> queues.get((Integer) queueId);

    private final DefaultMQProducer producer;
    private final List<SendResult> results = new ArrayList<>();
    private String sharedUniqKey;

    BrokerScenario(DefaultMQProducer producer) {
        this.producer = producer;
    }

    List<SendResult> results() {
        return results;
    }

    /** The client id (UNIQ_KEY) the SHARED_UNIQ_COUNT messages share. */
    String sharedUniqKey() {
        return sharedUniqKey;
    }

    /** Everything except the delivered delayed message, which {@link #sendDelivered()} sends last. */
    void sendAll() throws Exception {
        sendPlain();
        sendCompressed();
        sendBatch();
        sendHotKey();
        sendSharedUniqKey();
        Message pending = message(TOPIC, "TagDelay", "delay-18", text("stays scheduled for two hours"));
        pending.setDelayTimeLevel(PENDING_DELAY_LEVEL);
        send(pending, 0);
    }

    /** A delay-level-1 message: the broker stores it in SCHEDULE_TOPIC_XXXX and redelivers it to TOPIC after 1 s. */
    void sendDelivered() throws Exception {
        Message delayed = message(TOPIC, "TagDelay", "delay-1 delivered", text("delivered after one second"));
        delayed.setDelayTimeLevel(DELIVERED_DELAY_LEVEL);
        send(delayed, DELIVERED_QUEUE_ID);
    }

    /** Single and multi-token keys, no keys, unicode, tags or none, user properties, flags, text and binary bodies. */
    private void sendPlain() throws Exception {
        String[] keys = {"order-1", "k1 k2", "k2 k3", "ключ 😀", null, "order-1 order-2", " lead", "a  b", "dup dup"};
        String[] tags = {"TagA", "TagB", null, "标签"};
        for (int i = 0; i < 18; i++) {
            byte[] body = i % 5 == 4 ? binary(300 + i) : text("e2e body " + i + " ünïcödé 😀");
            Message m = message(TOPIC, tags[i % tags.length], keys[i % keys.length], body);
            m.setFlag(i % 3 == 0 ? 0 : i);
            if (i % 4 == 1) {
                m.putUserProperty("color", "blue");
                m.putUserProperty("unicode", "値😀é");
            }
            send(m, i % 4);
        }
    }

    /** A body over compressMsgBodyOverHowmuch (4 KiB): the producer compresses it (zlib) and sets sysFlag bits. */
    private void sendCompressed() throws Exception {
        send(message(TOPIC, "TagZip", "zip-1", text("compressible body line. ".repeat(300))), 2);
    }

    /** producer.send(Collection): one MessageBatch, stored as one record per message (§2.11). */
    private void sendBatch() throws Exception {
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            batch.add(message(TOPIC, "TagBatch", "batch-k" + i + " batch-all", text("batch body " + i)));
        }
        check(producer.send(batch, new MessageQueue(TOPIC, LoopbackCluster.BROKER_NAME, 3)));
    }

    private void sendHotKey() throws Exception {
        for (int i = 0; i < HOT_KEY_COUNT; i++) {
            send(message(HOT_TOPIC, "TagHot", "hot", text("hot " + i)), 0);
        }
    }

    /** The client keeps a UNIQ_KEY that is already set (MessageClientIDSetter.setUniqID), as on a resend. */
    private void sendSharedUniqKey() throws Exception {
        sharedUniqKey = MessageClientIDSetter.createUniqID();
        for (int i = 0; i < SHARED_UNIQ_COUNT; i++) {
            Message m = message(HOT_TOPIC, "TagSame", "same-" + i, text("same uniq key " + i));
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, sharedUniqKey);
            send(m, 1);
        }
    }

    private void send(Message m, int queueId) throws Exception {
        check(producer.send(m, BY_QUEUE_ID, queueId));
    }

    private void check(SendResult r) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send failed: " + r);
        }
        results.add(r);
    }

    private static Message message(String topic, String tags, String keys, byte[] body) {
        Message m = new Message(topic, body);
        if (tags != null) {
            m.setTags(tags);
        }
        if (keys != null) {
            m.setKeys(keys);
        }
        return m;
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
}
