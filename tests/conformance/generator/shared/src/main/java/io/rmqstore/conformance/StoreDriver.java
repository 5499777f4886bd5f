package io.rmqstore.conformance;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The few RocketMQ calls whose classes or signatures differ between 4.9.x and 5.x. Everything else
 * (MessageDecoder, MessageExt, compressors, MessageStoreConfig) is shared source compiled against each version.
 */
public interface StoreDriver {
    /** The release linked in, as RocketMQ reports itself ({@code MQVersion.CURRENT_VERSION}, e.g. "5.3.1"). */
    default String rocketmqVersion() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION).substring(1).replace('_', '.');
    }

    /** MESSAGE_MAGIC_CODE_V2 for topics longer than 127 chars exists (5.1.0+). */
    default boolean supportsLongTopics() {
        return atLeast(5, 1);
    }

    /** {@code enabledAppendPropCRC} exists (5.2.0+). */
    default boolean supportsPropCrc() {
        return atLeast(5, 2);
    }

    /** The linked release is {@code major.minor} or newer. */
    private boolean atLeast(int major, int minor) {
        String[] v = rocketmqVersion().split("\\.");
        int actualMajor = Integer.parseInt(v[0]);
        return actualMajor > major || actualMajor == major && Integer.parseInt(v[1]) >= minor;
    }

    /** 4.9.x DefaultMessageStore itself rewrites DELAY messages to SCHEDULE_TOPIC_XXXX; 5.x leaves it to a broker hook. */
    boolean storeRewritesDelay();

    /** Constructs, installs the fixed clock, load()s and start()s a store. */
    FixedClock open(StoreSettings settings, long initialTime) throws Exception;

    /** A fresh MessageExtBrokerInner. */
    MessageExt newMessage();

    /** A fresh MessageExtBatch. */
    MessageExt newBatch();

    /** Sets tagsCode and propertiesString from the message's properties, then putMessage / putMessages. */
    PutOutcome put(MessageExt message) throws Exception;

    /** Waits until the reput service has dispatched every byte (consume queues and index built). */
    void awaitDispatched() throws InterruptedException;

    /** IndexService.queryOffset: hash candidates in RocketMQ's order. */
    List<Long> indexQueryOffsets(String topic, String key, int maxNum, long begin, long end) throws Exception;

    /** DefaultMessageStore.queryMessage: physical offsets of the returned records, in returned order. */
    List<Long> queryMessage(String topic, String key, int maxNum, long begin, long end);

    /** The live store's MessageStoreConfig (queries may raise maxMsgsNumBatch on it). */
    org.apache.rocketmq.store.config.MessageStoreConfig config();

    MessageExt lookMessageByOffset(long offset);

    long minPhyOffset();

    long maxPhyOffset();

    long minOffsetInQueue(String topic, int queueId);

    long maxOffsetInQueue(String topic, int queueId);

    void shutdown();

    /** Opens another store on {@code settings.root()} (load = recovery), returns getMaxPhyOffset, shuts it down. */
    long recoverMaxPhyOffset(StoreSettings settings) throws Exception;

    /** Writes config/consumerOffset.json with RocketMQ's own ConfigManager persist. */
    void persistConsumerOffsets(Path storeRoot, Map<String, Map<Integer, Long>> offsetTable) throws Exception;
}
