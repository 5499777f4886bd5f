package io.rmqstore.conformance.broker5;

import io.rmqstore.conformance.Oracle;
import io.rmqstore.conformance.rmq5.Rmq5Driver;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.hook.EndTransactionContext;
import org.apache.rocketmq.client.hook.EndTransactionHook;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * What the producers of the life fixture send, one synchronous send at a time, each to a named queue (transactions
 * to a one-queue topic), and each broker-side delivery (delay level, timer, transaction commit) awaited in the store
 * before the next send, so every record outside the trace topic gets the same topic, queue and queue offset in
 * every run. Every message has its own KEYS (the name compare_fixtures.py uses for its UNIQ_KEY).
 */
final class LifeScenario {
    static final String TOPIC = "OrderEvents";
    static final int QUEUES = 4;
    static final String TX_TOPIC = "OrderPayments";
    /** Consumer group B blocks in its listener on this message (queue 2, offset 0): the rest of queue 2 is pending. */
    static final String HOLD_KEY = "order-2";
    static final int HOLD_QUEUE = 2;
    /** Consumer group C fails this message until it goes to its DLQ. */
    static final String POISON_KEY = "order-7";
    /** Broker delay levels: 1-3 are one second (retries use 3 + reconsumeTimes), 4 is two hours (stays pending). */
    static final String DELAY_LEVELS = "1s 1s 1s 2h";
    static final int DELIVERED_DELAY_LEVEL = 1;
    static final int PENDING_DELAY_LEVEL = 4;
    static final long TIMER_DELIVERED_AFTER_MILLIS = 2_000;
    static final long TIMER_PENDING_AFTER_MILLIS = 30 * 60_000;
    static final long DELIVERY_TIMEOUT_MILLIS = 30_000;
    static final String[] TAGS = {"Created", "Paid", "Shipped"};
    static final int ORDERS = 12;

    private static final MessageQueueSelector BY_QUEUE_ID = (queues, message, queueId) -> queues.get((Integer) queueId);

    private final DefaultMQProducer producer;
    private final TransactionMQProducer txProducer;
    private final Rmq5Driver store;
    private final List<Map<String, Object>> sent = new ArrayList<>();
    private final AtomicInteger transactionEnds = new AtomicInteger();
    private final Map<String, List<String>> checkAnswers = new ConcurrentHashMap<>();

    /**
     * Producers not started yet: sets the transaction listener and counts the ends of transaction (the trace hook,
     * registered by start(), appends its context right after each count).
     */
    LifeScenario(DefaultMQProducer producer, TransactionMQProducer txProducer, Rmq5Driver store) {
        this.producer = producer;
        this.txProducer = txProducer;
        this.store = store;
        txProducer.setTransactionListener(transactionListener());
        txProducer.getDefaultMQProducerImpl().registerEndTransactionHook(new EndTransactionHook() {
            @Override
            public String hookName() {
                return "LifeTransactionEnds";
            }

            @Override
            public void endTransaction(EndTransactionContext context) {
                transactionEnds.incrementAndGet();
            }
        });
    }

    /**
     * The local transaction of the key names its state: tx-commit, tx-rollback, tx-check (UNKNOW, then COMMIT when the
     * broker checks); each answer to a check is kept per key.
     */
    private TransactionListener transactionListener() {
        return new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return switch (msg.getKeys()) {
                    case "tx-commit" -> LocalTransactionState.COMMIT_MESSAGE;
                    case "tx-rollback" -> LocalTransactionState.ROLLBACK_MESSAGE;
                    default -> LocalTransactionState.UNKNOW;
                };
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checkAnswers.computeIfAbsent(msg.getKeys(), k -> new CopyOnWriteArrayList<>())
                    .add(LocalTransactionState.COMMIT_MESSAGE.name());
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        };
    }

    /**
     * Oracle section {@code sent}: what every send returned, in send order; for a transaction also the producer's
     * answers to the broker's checks and its outcome in {@code walk} (COMMIT: a record of it in TX_TOPIC).
     */
    List<Map<String, Object>> sent(Oracle.Walk walk) {
        for (Map<String, Object> s : sent) {
            if (s.containsKey("localTransactionState")) {
                s.put("checkAnswers", List.copyOf(checkAnswers.getOrDefault((String) s.get("keys"), List.of())));
                boolean committed = walk.records().stream().map(Oracle.Decoded::stored)
                    .anyMatch(m -> m.getTopic().equals(TX_TOPIC) && s.get("msgId").equals(
                        m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)));
                s.put("outcome", committed ? "COMMIT" : "ROLLBACK");
            }
        }
        return sent;
    }

    /** Successful sends of the traced producers (one Pub trace context each). */
    int sends() {
        return sent.size();
    }

    /** Ends of transaction the producer sent, after its local transaction or a check (one trace context each). */
    int transactionEnds() {
        return transactionEnds.get();
    }

    void sendAll() throws Exception {
        for (int i = 0; i < ORDERS; i++) {
            String keys = i == 5 ? "order-5 customer-42" : "order-" + i;
            // order-9's body is over compressMsgBodyOverHowmuch (4 KiB): the producer stores it zlib-compressed
            String body = i == 9 ? "order event 9, line after line. ".repeat(150) : "order event " + i;
            send(message(TOPIC, TAGS[i % TAGS.length], keys, body), i % QUEUES);
        }
        Message delivered = message(TOPIC, "Reminder", "delay-delivered", "delivered after one second");
        delivered.setDelayTimeLevel(DELIVERED_DELAY_LEVEL);
        sendAndAwaitDelivery(delivered, 1);
        Message pending = message(TOPIC, "Reminder", "delay-pending", "scheduled for two hours");
        pending.setDelayTimeLevel(PENDING_DELAY_LEVEL);
        send(pending, 0);
        Message timer = message(TOPIC, "Timer", "timer-delivered", "timer fired after two seconds");
        timer.setDeliverTimeMs(System.currentTimeMillis() + TIMER_DELIVERED_AFTER_MILLIS);
        sendAndAwaitDelivery(timer, 3);
        Message timerPending = message(TOPIC, "Timer", "timer-pending", "timer in thirty minutes");
        timerPending.setDeliverTimeMs(System.currentTimeMillis() + TIMER_PENDING_AFTER_MILLIS);
        send(timerPending, 0);
        sendTransaction("tx-commit", 1);
        sendTransaction("tx-rollback", 1);
        sendTransaction("tx-check", 2);
    }

    private void sendAndAwaitDelivery(Message m, int queueId) throws Exception {
        long end = store.maxOffsetInQueue(TOPIC, queueId);
        send(m, queueId);
        LoopbackCluster.await("delivery of " + m.getKeys() + " to " + TOPIC + "/" + queueId,
            DELIVERY_TIMEOUT_MILLIS, () -> store.maxOffsetInQueue(TOPIC, queueId) > end);
    }

    /**
     * A half message, its local transaction and the broker's end (or check): waits until TX_TOPIC holds
     * {@code queueEnd} messages and the end's op record is written.
     */
    private void sendTransaction(String keys, long queueEnd) throws Exception {
        long ops = store.maxOffsetInQueue(LifeFixture.OP_HALF_TOPIC, 0);
        TransactionSendResult r = txProducer.sendMessageInTransaction(message(TX_TOPIC, "Payment", keys,
            "payment " + keys), null);
        record(txProducer.getProducerGroup(), keys, r).put("localTransactionState", r.getLocalTransactionState().name());
        LoopbackCluster.await("end of transaction " + keys, DELIVERY_TIMEOUT_MILLIS,
            () -> store.maxOffsetInQueue(TX_TOPIC, 0) == queueEnd
                && store.maxOffsetInQueue(LifeFixture.OP_HALF_TOPIC, 0) > ops);
    }

    private void send(Message m, int queueId) throws Exception {
        record(producer.getProducerGroup(), m.getKeys(), producer.send(m, BY_QUEUE_ID, queueId));
    }

    private Map<String, Object> record(String group, String keys, SendResult r) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send failed: " + r);
        }
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("producerGroup", group);
        s.put("keys", keys);
        s.put("topic", r.getMessageQueue().getTopic());
        s.put("queueId", r.getMessageQueue().getQueueId());
        s.put("queueOffset", r.getQueueOffset());
        s.put("msgId", r.getMsgId());
        s.put("offsetMsgId", r.getOffsetMsgId());
        s.put("transactionId", r.getTransactionId());
        sent.add(s);
        return s;
    }

    private static Message message(String topic, String tags, String keys, String body) {
        Message m = new Message(topic, body.getBytes(StandardCharsets.UTF_8));
        m.setTags(tags);
        m.setKeys(keys);
        return m;
    }
}
