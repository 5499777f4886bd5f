package io.rmqstore.conformance;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/** Store geometry of a fixture: small sizes so commit log, consume queue and index files roll over. */
public record StoreSettings(Path root, int commitLogSegment, int consumeQueueSegment, int hashSlots, int indexEntries,
                            boolean appendPropCrc) {

    public StoreSettings withRoot(Path newRoot) {
        return new StoreSettings(newRoot, commitLogSegment, consumeQueueSegment, hashSlots, indexEntries, appendPropCrc);
    }

    /** The RocketMQ configuration (MessageStoreConfig, §9.2), the same for every release that has the setting. */
    public MessageStoreConfig toConfig() throws IOException {
        MessageStoreConfig c = new MessageStoreConfig();
        c.setStorePathRootDir(root.toString());
        c.setStorePathCommitLog(root.resolve("commitlog").toString());
        c.setMappedFileSizeCommitLog(commitLogSegment);
        c.setMappedFileSizeConsumeQueue(consumeQueueSegment);
        c.setMaxHashSlotNum(hashSlots);
        c.setMaxIndexNum(indexEntries);
        c.setFlushDiskType(FlushDiskType.SYNC_FLUSH);
        c.setHaListenPort(freeLoopbackPort());
        if (appendPropCrc) { // the setter exists from 5.2.0 on; older releases never ask for it
            try {
                MessageStoreConfig.class.getMethod("setEnabledAppendPropCRC", boolean.class).invoke(c, true);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("this RocketMQ has no enabledAppendPropCRC", e);
            }
        }
        return c;
    }

    /** Oracle section (d): the settings a reader needs. */
    public Map<String, Object> describe(MessageStoreConfig c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("mappedFileSizeCommitLog", c.getMappedFileSizeCommitLog());
        m.put("mappedFileSizeConsumeQueue", c.getMappedFileSizeConsumeQueue());
        m.put("maxHashSlotNum", c.getMaxHashSlotNum());
        m.put("maxIndexNum", c.getMaxIndexNum());
        m.put("maxMsgsNumBatch", c.getMaxMsgsNumBatch());
        m.put("defaultQueryMaxNum", c.getDefaultQueryMaxNum());
        m.put("checkCRCOnRecover", c.isCheckCRCOnRecover());
        m.put("messageDelayLevel", c.getMessageDelayLevel());
        m.put("flushDiskType", c.getFlushDiskType().name());
        m.put("enabledAppendPropCRC", appendPropCrc);
        return m;
    }

    private static int freeLoopbackPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
