package io.rmqstore.conformance.broker5;

import io.rmqstore.conformance.Oracle;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * RocketMQ's answers through the admin API over the network, i.e. what mqadmin prints:
 * queryMsgByKey = {@code queryMessage(topic, key, 64, 0, Long.MAX_VALUE)} (the broker caps at maxMsgsNumBatch 64
 * hash candidates, the client keeps topic-equal records whose KEYS split on " " contain the key),
 * queryMsgByUniqueKey = {@code queryMessageByUniqKey(cluster, topic, uniqKey, 32, 0, Long.MAX_VALUE)} (broker cap
 * defaultQueryMaxNum 32, client keeps UNIQ_KEY-equal records), queryMsgById = {@code viewMessage(topic, msgId)}
 * (an offsetMsgId is looked up at its broker by offset; anything else falls back to the first unique-key match).
 * Answers are the commitLogOffsets of the returned messages in returned order; "error" is the client's
 * response code when it threw (e.g. 208 NO_MESSAGE).
 */
final class AdminOracle {
    static final int KEY_QUERY_MAX = 64;
    static final int UNIQ_KEY_QUERY_MAX = 32;

    private final DefaultMQAdminExt admin;

    AdminOracle(DefaultMQAdminExt admin) {
        this.admin = admin;
    }

    /** Key queries for every (topic, KEYS token) in the log plus the probes; unique-key queries for every UNIQ_KEY. */
    Map<String, Object> answers(Oracle.Walk walk, List<String[]> keyProbes, List<String> msgIds) throws Exception {
        LinkedHashSet<List<String>> keys = new LinkedHashSet<>();
        LinkedHashSet<List<String>> uniqKeys = new LinkedHashSet<>();
        for (Oracle.Decoded d : walk.records()) {
            MessageExt s = d.stored();
            if (s.getKeys() != null) {
                for (String token : s.getKeys().split(MessageConst.KEY_SEPARATOR)) {
                    if (!token.isEmpty()) {
                        keys.add(List.of(s.getTopic(), token));
                    }
                }
            }
            String uniq = s.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            if (uniq != null) {
                uniqKeys.add(List.of(s.getTopic(), uniq));
            }
        }
        keyProbes.forEach(p -> keys.add(List.of(p[0], p[1])));

        List<Map<String, Object>> keyAnswers = new ArrayList<>();
        for (List<String> k : keys) {
            keyAnswers.add(answer("key", k.get(0), k.get(1), () -> admin.queryMessage(k.get(0), k.get(1),
                KEY_QUERY_MAX, 0, Long.MAX_VALUE).getMessageList()));
        }
        List<Map<String, Object>> uniqAnswers = new ArrayList<>();
        for (List<String> k : uniqKeys) {
            uniqAnswers.add(answer("uniqKey", k.get(0), k.get(1), () -> uniqKeyQuery(k.get(0), k.get(1))));
        }
        List<Map<String, Object>> idAnswers = new ArrayList<>();
        for (String id : msgIds) {
            idAnswers.add(answer("msgId", null, id, () -> viewMessage(walk, id)));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("keyQueries", keyAnswers);
        out.put("uniqKeyQueries", uniqAnswers);
        out.put("msgIdQueries", idAnswers);
        return out;
    }

    /** The topics {@link #answers} names: every record's topic and the probes' topics. */
    static Set<String> topicsAsked(Oracle.Walk walk, List<String[]> keyProbes) {
        Set<String> topics = new LinkedHashSet<>();
        walk.records().forEach(d -> topics.add(d.stored().getTopic()));
        keyProbes.forEach(p -> topics.add(p[0]));
        return topics;
    }

    private List<MessageExt> uniqKeyQuery(String topic, String uniqKey) throws Exception {
        QueryResult r = admin.queryMessageByUniqKey(LoopbackCluster.CLUSTER_NAME, topic, uniqKey, UNIQ_KEY_QUERY_MAX,
            0, Long.MAX_VALUE);
        return r.getMessageList();
    }

    /**
     * mqadmin queryMsgById takes a topic: that of the record the id names as offsetMsgId, else as UNIQ_KEY (the
     * fallback searches that topic), else of the first record.
     */
    private List<MessageExt> viewMessage(Oracle.Walk walk, String id) throws Exception {
        String topic = walk.records().stream()
            .filter(d -> id.equals(d.stored().getMsgId())
                || id.equals(d.stored().getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)))
            .findFirst().orElse(walk.records().get(0)).stored().getTopic();
        MessageExt m = admin.viewMessage(topic, id);
        return m == null ? List.of() : List.of(m);
    }

    private interface Query {
        List<MessageExt> run() throws Exception;
    }

    private static Map<String, Object> answer(String kind, String topic, String key, Query query) throws Exception {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("kind", kind);
        if (topic != null) {
            a.put("topic", topic);
        }
        a.put(kind.equals("msgId") ? "msgId" : "key", key);
        List<Long> offsets = new ArrayList<>();
        try {
            query.run().forEach(m -> offsets.add(m.getCommitLogOffset()));
        } catch (MQClientException e) {
            a.put("error", e.getResponseCode());
        }
        a.put("offsets", offsets);
        return a;
    }
}
