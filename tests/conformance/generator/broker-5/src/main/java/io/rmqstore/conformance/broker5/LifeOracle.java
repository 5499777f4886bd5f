package io.rmqstore.conformance.broker5;

import io.rmqstore.conformance.Oracle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.admin.ConsumeStats;
import org.apache.rocketmq.remoting.protocol.admin.OffsetWrapper;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.admin.api.MessageTrack;

/**
 * The life fixture's own oracle sections, RocketMQ's answers while the broker and the consumers run:
 * {@code consumeStats} (mqadmin consumerProgress: {@code examineConsumeStats(group)}), {@code messageTrack} (mqadmin
 * queryMsgByUniqueKey: the message found by {@code queryMessageByUniqKey} in the topic it was sent to, then
 * {@code messageTrackDetail}) and {@code traceRecords} (every trace-topic record's body decoded by the client's
 * {@code TraceDataEncoder.decoderFromTraceDataString}).
 */
final class LifeOracle {
    static final int UNIQ_KEY_QUERY_MAX = 32;

    private final DefaultMQAdminExt admin;

    LifeOracle(DefaultMQAdminExt admin) {
        this.admin = admin;
    }

    /** Per group, every queue of its ConsumeStats ordered by topic and queue id, and its consumeTps. */
    Map<String, Object> consumeStats(List<String> groups) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String group : groups) {
            ConsumeStats stats = admin.examineConsumeStats(group);
            List<Map<String, Object>> queues = new ArrayList<>();
            stats.getOffsetTable().entrySet().stream()
                .sorted(Comparator.comparing((Map.Entry<MessageQueue, OffsetWrapper> e) -> e.getKey().getTopic())
                    .thenComparingInt(e -> e.getKey().getQueueId()))
                .forEach(e -> {
                    Map<String, Object> q = new LinkedHashMap<>();
                    q.put("topic", e.getKey().getTopic());
                    q.put("brokerName", e.getKey().getBrokerName());
                    q.put("queueId", e.getKey().getQueueId());
                    q.put("brokerOffset", e.getValue().getBrokerOffset());
                    q.put("consumerOffset", e.getValue().getConsumerOffset());
                    q.put("pullOffset", e.getValue().getPullOffset());
                    q.put("lastTimestamp", e.getValue().getLastTimestamp());
                    queues.add(q);
                });
            Map<String, Object> g = new LinkedHashMap<>();
            g.put("consumeTps", stats.getConsumeTps());
            g.put("queues", queues);
            out.put(group, g);
        }
        return out;
    }

    /** For every send: the message mqadmin finds by its UNIQ_KEY in the topic it was sent to and its track. */
    List<Map<String, Object>> messageTrack(List<Map<String, Object>> sent) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map<String, Object> s : sent) {
            String topicSent = (String) s.get("topic");
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("keys", s.get("keys"));
            t.put("msgId", s.get("msgId"));
            t.put("topic", topicSent);
            try {
                QueryResult r = admin.queryMessageByUniqKey(LoopbackCluster.CLUSTER_NAME, topicSent,
                    (String) s.get("msgId"), UNIQ_KEY_QUERY_MAX, 0, Long.MAX_VALUE);
                MessageExt m = r.getMessageList().stream().findFirst().orElseThrow(
                    () -> new IllegalStateException("queryMessageByUniqKey returned no message and no error: " + s));
                t.put("commitLogOffset", m.getCommitLogOffset());
                t.put("queueId", m.getQueueId());
                t.put("queueOffset", m.getQueueOffset());
                List<Map<String, Object>> tracks = new ArrayList<>();
                admin.messageTrackDetail(m).stream().sorted(Comparator.comparing(MessageTrack::getConsumerGroup))
                    .forEach(track -> {
                        Map<String, Object> g = new LinkedHashMap<>();
                        g.put("consumerGroup", track.getConsumerGroup());
                        g.put("trackType", track.getTrackType().name());
                        g.put("exceptionDesc", track.getExceptionDesc());
                        tracks.add(g);
                    });
                t.put("tracks", tracks);
            } catch (MQClientException e) {
                t.put("error", e.getResponseCode());
            }
            out.add(t);
        }
        return out;
    }

    /** Every TraceContext of every record in the trace topic, with that record's commitLogOffset. */
    static List<Map<String, Object>> traceRecords(Oracle.Walk walk, String traceTopic) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Oracle.Decoded d : walk.records()) {
            if (!traceTopic.equals(d.stored().getTopic())) {
                continue;
            }
            String body = new String(d.decompressed().getBody(), StandardCharsets.UTF_8);
            for (TraceContext c : TraceDataEncoder.decoderFromTraceDataString(body)) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("commitLogOffset", d.offset());
                m.put("traceType", c.getTraceType().name());
                m.put("timeStamp", c.getTimeStamp());
                m.put("regionId", c.getRegionId());
                m.put("regionName", c.getRegionName());
                m.put("groupName", c.getGroupName());
                m.put("costTime", c.getCostTime());
                m.put("success", c.isSuccess());
                m.put("requestId", c.getRequestId());
                m.put("contextCode", c.getContextCode());
                List<Map<String, Object>> beans = new ArrayList<>();
                for (TraceBean b : c.getTraceBeans()) {
                    beans.add(bean(b));
                }
                m.put("traceBeans", beans);
                out.add(m);
            }
        }
        return out;
    }

    private static Map<String, Object> bean(TraceBean b) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", b.getTopic());
        m.put("msgId", b.getMsgId());
        m.put("offsetMsgId", b.getOffsetMsgId());
        m.put("tags", b.getTags());
        m.put("keys", b.getKeys());
        m.put("storeHost", b.getStoreHost());
        m.put("clientHost", b.getClientHost());
        m.put("storeTime", b.getStoreTime());
        m.put("retryTimes", b.getRetryTimes());
        m.put("bodyLength", b.getBodyLength());
        m.put("msgType", b.getMsgType() == null ? null : b.getMsgType().name());
        m.put("transactionId", b.getTransactionId());
        m.put("transactionState", b.getTransactionState() == null ? null : b.getTransactionState().name());
        m.put("fromTransactionCheck", b.isFromTransactionCheck());
        return m;
    }
}
