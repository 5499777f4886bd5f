package io.rmqstore.conformance.broker5;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.hook.ConsumeMessageContext;
import org.apache.rocketmq.client.hook.ConsumeMessageHook;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One push consumer group of the life fixture, message trace on, clustering, from the first offset, one message per
 * listener call. Its {@link Behaviour} decides per message; a hook registered after the trace hook counts the listener
 * calls that started and ended (so each counted end has already handed its SubAfter context to the trace dispatcher).
 */
final class LifeConsumer {
    /** What the listener does with a message. */
    enum Behaviour {
        /** Consumes every message. */
        ALL,
        /** Blocks for ever on {@link LifeScenario#HOLD_KEY} (the committed offset of its queue stays there). */
        HOLD,
        /** Returns RECONSUME_LATER for {@link LifeScenario#POISON_KEY} until RocketMQ sends it to the DLQ. */
        RETRY
    }

    static final int PERSIST_OFFSETS_MILLIS = 500;

    private final DefaultMQPushConsumer consumer;
    private final AtomicInteger started = new AtomicInteger();
    private final AtomicInteger ended = new AtomicInteger();

    LifeConsumer(LoopbackCluster cluster, String group, Behaviour behaviour, List<String> topics) throws Exception {
        consumer = cluster.client(new DefaultMQPushConsumer(group, true, null), group);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(PERSIST_OFFSETS_MILLIS);
        consumer.setMaxReconsumeTimes(1);
        for (String topic : topics) {
            consumer.subscribe(topic, "*");
        }
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            MessageExt m = messages.get(0);
            if (behaviour == Behaviour.HOLD && LifeScenario.HOLD_KEY.equals(m.getKeys())) {
                holdForever();
            }
            boolean fail = behaviour == Behaviour.RETRY && LifeScenario.POISON_KEY.equals(m.getKeys());
            return fail ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
    }

    void start() throws Exception {
        consumer.start();
        consumer.getDefaultMQPushConsumerImpl().registerConsumeMessageHook(new ConsumeMessageHook() {
            @Override
            public String hookName() {
                return "LifeConsumerCount";
            }

            @Override
            public void consumeMessageBefore(ConsumeMessageContext context) {
                started.incrementAndGet();
            }

            @Override
            public void consumeMessageAfter(ConsumeMessageContext context) {
                ended.incrementAndGet();
            }
        });
    }

    String group() {
        return consumer.getConsumerGroup();
    }

    /** Listener calls begun (SubBefore trace contexts). */
    int started() {
        return started.get();
    }

    /** Listener calls returned (SubAfter trace contexts). */
    int ended() {
        return ended.get();
    }

    void shutdown() {
        consumer.shutdown();
    }

    /**
     * Never returns, not even when the consumer's shutdown interrupts its threads: a return would let the offset
     * move past the held message before the shutdown persists it. The JVM exits with the thread still parked.
     */
    private static void holdForever() {
        while (true) {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                // keep holding
            }
        }
    }
}
