package io.rmqstore.conformance;

/** What DefaultMessageStore.putMessage(s) answered (AppendMessageResult). */
public record PutOutcome(String status, long wroteOffset, int wroteBytes, int msgNum, String msgId, long queueOffset) {
}
