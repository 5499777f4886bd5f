package io.rmqstore.conformance;

import io.rmqstore.conformance.common.FileTrees;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.index.IndexService;

/** RocketMQ's own answers about a store, as JSON-ready maps (oracle sections a and b). */
public final class Oracle {
    static final int BLANK_MAGIC = 0xCBD43194;
    static final int MAGIC_V1 = 0xDAA320A7;
    static final int MAGIC_V2 = 0xDAA320AB;
    /** maxNum for "uncapped" queries (IndexService pre-sizes its result list with maxNum). */
    static final int UNCAPPED = 100_000;

    private Oracle() {
    }

    /** One decoded commit-log record and where it sits. */
    public record Decoded(long offset, int magic, MessageExt stored, MessageExt decompressed) {
    }

    /** Result of walking the commit-log segments like recovery does (BLANK ends a segment, bad magic ends the log). */
    public record Walk(List<Decoded> records, List<Map<String, Object>> blanks, long end) {
    }

    /**
     * How records sit in a log's files (docs/format.md §2.12, §2.13): bare in commit-log segments, or each the body
     * of a DLedger entry whose {@code lead}-byte header comes first.
     */
    public enum Framing {
        /** commitlog/ segments: TOTALSIZE, MAGIC; a BLANK ends a segment, anything else but v1/v2 ends the log. */
        COMMIT_LOG(0, "record"),
        /**
         * DLedger data files, like DLedgerMmapFileStore.recover: an entry of magic 1 whose pos field is its position
         * and whose body size fits the entry; a blank (magic -1) ends a file, anything else ends the log.
         */
        DLEDGER(48, "DLedger entry");

        static final int DLEDGER_MAGIC = 1;
        static final int DLEDGER_BLANK_MAGIC = -1;

        /** Bytes of framing before each record. */
        public final int lead;
        final String unit;

        Framing(int lead, String unit) {
            this.lead = lead;
            this.unit = unit;
        }

        int magicAt(ByteBuffer buf, int pos) {
            return buf.getInt(this == DLEDGER ? pos : pos + 4);
        }

        /** The size of the unit (record or entry) at pos. */
        int sizeAt(ByteBuffer buf, int pos) {
            return buf.getInt(this == DLEDGER ? pos + 4 : pos);
        }

        boolean blank(int magic) {
            return magic == (this == DLEDGER ? DLEDGER_BLANK_MAGIC : BLANK_MAGIC);
        }

        boolean valid(ByteBuffer buf, int pos, long base, int magic, int size) {
            if (pos + size > buf.capacity()) {
                return false;
            }
            if (this == COMMIT_LOG) {
                return (magic == MAGIC_V1 || magic == MAGIC_V2) && size > 0;
            }
            return magic == DLEDGER_MAGIC && size > lead && buf.getLong(pos + 24) == base + pos
                && buf.getInt(pos + 44) + lead == size;
        }
    }

    /** Walks commitlog/ in name order and decodes every record with MessageDecoder.decode. */
    public static Walk walk(Path storeRoot) throws IOException {
        return walk(storeRoot.resolve("commitlog"), Framing.COMMIT_LOG);
    }

    /**
     * Walks the files of {@code dir} in name order like recovery, decoding every record with MessageDecoder.decode;
     * a record's PHYSICALOFFSET must be its file's base + its position (after the framing's lead).
     */
    public static Walk walk(Path dir, Framing framing) throws IOException {
        List<Decoded> records = new ArrayList<>();
        List<Map<String, Object>> blanks = new ArrayList<>();
        long end = -1;
        outer:
        for (Path file : FileTrees.sortedFiles(dir)) {
            long base = Long.parseLong(file.getFileName().toString());
            ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(file));
            int pos = 0;
            while (true) {
                end = base + pos;
                if (buf.capacity() - pos < 8) {
                    break;
                }
                int magic = framing.magicAt(buf, pos);
                int size = framing.sizeAt(buf, pos);
                if (framing.blank(magic)) {
                    Map<String, Object> blank = new LinkedHashMap<>();
                    blank.put("offset", base + pos);
                    blank.put("size", size);
                    blanks.add(blank);
                    end = base + buf.capacity();
                    break;
                }
                if (!framing.valid(buf, pos, base, magic, size)) {
                    break outer;
                }
                ByteBuffer record = buf.slice(pos + framing.lead, size - framing.lead);
                MessageExt stored = MessageDecoder.decode(record.duplicate(), true, false, false);
                MessageExt decompressed = MessageDecoder.decode(record.duplicate(), true, true, false);
                long offset = base + pos + framing.lead;
                if (stored == null || decompressed == null || stored.getCommitLogOffset() != offset) {
                    throw new IllegalStateException("MessageDecoder rejected the " + framing.unit + " at " + (base + pos));
                }
                records.add(new Decoded(offset, record.getInt(4), stored, decompressed));
                pos += size;
            }
        }
        return new Walk(records, blanks, end);
    }

    /** Oracle section (a): one record with fields named like the table columns. */
    public static Map<String, Object> recordJson(Decoded d) {
        MessageExt s = d.stored();
        Map<String, String> props = s.getProperties();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("commitLogOffset", s.getCommitLogOffset());
        m.put("magic", d.magic() == MAGIC_V2 ? 2 : 1);
        m.put("topic", s.getTopic());
        m.put("queueId", s.getQueueId());
        m.put("queueOffset", s.getQueueOffset());
        m.put("storeSize", s.getStoreSize());
        m.put("msgId", s.getMsgId());
        m.put("uniqKey", props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        m.put("key", props.get(MessageConst.PROPERTY_KEYS));
        m.put("tags", props.get(MessageConst.PROPERTY_TAGS));
        m.put("body", base64(d.decompressed().getBody()));
        m.put("storedBodyLength", s.getBody() == null ? 0 : s.getBody().length);
        m.put("bodyCrc", s.getBodyCRC());
        m.put("flag", s.getFlag());
        m.put("sysFlag", s.getSysFlag());
        m.put("bornTimestamp", s.getBornTimestamp());
        m.put("storeTimestamp", s.getStoreTimestamp());
        m.put("bornHost", hostString((InetSocketAddress) s.getBornHost()));
        m.put("storeHost", hostString((InetSocketAddress) s.getStoreHost()));
        m.put("reconsumeTimes", s.getReconsumeTimes());
        m.put("preparedTransactionOffset", s.getPreparedTransactionOffset());
        m.put("properties", new TreeMap<>(props));
        return m;
    }

    /** "ip:port", IPv6 as "[addr]:port" with the JDK's full (uncompressed) textual form. */
    static String hostString(InetSocketAddress a) {
        String ip = a.getAddress().getHostAddress();
        return (ip.contains(":") ? "[" + ip + "]" : ip) + ":" + a.getPort();
    }

    private static String base64(byte[] body) {
        return Base64.getEncoder().encodeToString(body == null ? new byte[0] : body);
    }

    /**
     * Oracle section (b): key and unique-key queries. For every (topic, key) RocketMQ's capped answers
     * (IndexService.queryOffset with 64 / 32 and DefaultMessageStore.queryMessage) and, with
     * maxMsgsNumBatch raised, its uncapped ones; "matches" applies the client-side filters of
     * MQAdminImpl.queryMessage (topic equal and key among KEYS split on " ", or UNIQ_KEY equal).
     */
    public static List<Map<String, Object>> queries(StoreDriver driver, Walk walk, List<String[]> extraProbes)
        throws Exception {
        LinkedHashSet<List<String>> keyProbes = new LinkedHashSet<>();
        LinkedHashSet<List<String>> uniqProbes = new LinkedHashSet<>();
        for (Decoded d : walk.records()) {
            MessageExt s = d.stored();
            String keys = s.getKeys();
            if (keys != null) {
                for (String token : keys.split(MessageConst.KEY_SEPARATOR)) {
                    if (!token.isEmpty()) {
                        keyProbes.add(List.of(s.getTopic(), token));
                    }
                }
            }
            String uniq = s.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            if (uniq != null) {
                uniqProbes.add(List.of(s.getTopic(), uniq));
            }
        }
        for (String[] p : extraProbes) {
            keyProbes.add(List.of(p[0], p[1]));
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (List<String> p : keyProbes) {
            out.add(query(driver, walk, "key", p.get(0), p.get(1)));
        }
        for (List<String> p : uniqProbes) {
            out.add(query(driver, walk, "uniqKey", p.get(0), p.get(1)));
        }
        return out;
    }

    private static Map<String, Object> query(StoreDriver driver, Walk walk, String kind, String topic, String key)
        throws Exception {
        int cap = kind.equals("key") ? driver.config().getMaxMsgsNumBatch() : driver.config().getDefaultQueryMaxNum();
        int defaultBatch = driver.config().getMaxMsgsNumBatch();
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("kind", kind);
        q.put("topic", topic);
        q.put("key", key);
        q.put("maxNum", cap);
        List<Long> capped = driver.queryMessage(topic, key, cap, 0, Long.MAX_VALUE);
        q.put("queryMessage", capped);
        q.put("capped", capped.size() >= cap);
        q.put("queryOffsetCapped", driver.indexQueryOffsets(topic, key, cap, 0, Long.MAX_VALUE));
        driver.config().setMaxMsgsNumBatch(UNCAPPED);
        try {
            List<Long> all = driver.queryMessage(topic, key, UNCAPPED, 0, Long.MAX_VALUE);
            q.put("queryMessageAll", all);
            q.put("matchesAll", filter(driver, all, kind, topic, key));
        } finally {
            driver.config().setMaxMsgsNumBatch(defaultBatch);
        }
        return q;
    }

    private static List<Long> filter(StoreDriver driver, List<Long> offsets, String kind, String topic, String key) {
        List<Long> matches = new ArrayList<>();
        for (long offset : offsets) {
            MessageExt m = driver.lookMessageByOffset(offset);
            if (m == null || !topic.equals(m.getTopic())) {
                continue;
            }
            boolean hit = kind.equals("key")
                ? m.getKeys() != null && List.of(m.getKeys().split(MessageConst.KEY_SEPARATOR)).contains(key)
                : key.equals(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
            if (hit) {
                matches.add(offset);
            }
        }
        return matches;
    }

    /**
     * IndexService.queryOffset of a DefaultMessageStore: hash candidates in RocketMQ's order. The service is
     * read from the store's {@code indexService} field, which every release has (a getter only some do).
     */
    public static List<Long> indexQueryOffsets(Object store, String topic, String key, int maxNum, long begin,
        long end) throws ReflectiveOperationException {
        Field field = FixedClock.findField(store.getClass(), "indexService");
        field.setAccessible(true);
        IndexService index = (IndexService) field.get(store);
        return new ArrayList<>(index.queryOffset(topic, key, maxNum, begin, end).getPhyOffsets());
    }

    /** Physical offsets of the records a QueryMessageResult holds (PHYSICALOFFSET field at byte 28). */
    public static List<Long> offsetsOf(QueryMessageResult result) {
        List<Long> offsets = new ArrayList<>();
        try {
            for (ByteBuffer b : result.getMessageBufferList()) {
                offsets.add(b.getLong(b.position() + 28));
            }
        } finally {
            result.release();
        }
        return offsets;
    }

    /** Msg-id queries: MessageDecoder.decodeMessageId, then lookMessageByOffset at the decoded offset. */
    public static List<Map<String, Object>> msgIdQueries(StoreDriver driver, List<String> ids) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (String id : ids) {
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("msgId", id);
            try {
                MessageId decoded = MessageDecoder.decodeMessageId(id);
                q.put("storeHost", hostString((InetSocketAddress) decoded.getAddress()));
                q.put("offset", decoded.getOffset());
                MessageExt m = driver.lookMessageByOffset(decoded.getOffset());
                q.put("found", m != null && m.getCommitLogOffset() == decoded.getOffset());
            } catch (Exception e) {
                q.put("error", e.getClass().getSimpleName());
            }
            out.add(q);
        }
        return out;
    }
}
