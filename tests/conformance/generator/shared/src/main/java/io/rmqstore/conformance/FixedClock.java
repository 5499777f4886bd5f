package io.rmqstore.conformance;

import java.lang.reflect.Field;
import org.apache.rocketmq.common.SystemClock;

/**
 * A clock the generator sets before every put. DefaultMessageStore takes STORETIMESTAMP from its
 * {@code systemClock} inside the put lock (CommitLog.asyncPutMessage/asyncPutMessages in 4.9.8 and 5.x),
 * so installing this clock makes store timestamps, index time diffs and checkpoint times deterministic.
 */
public final class FixedClock extends SystemClock {
    private volatile long now;

    public void set(long timeMillis) {
        this.now = timeMillis;
    }

    @Override
    public long now() {
        return now;
    }

    /** Replaces the private final {@code systemClock} field of a DefaultMessageStore instance. */
    public static FixedClock installInto(Object store, long initialTime) throws ReflectiveOperationException {
        FixedClock clock = new FixedClock();
        clock.set(initialTime);
        Field field = findField(store.getClass(), "systemClock");
        field.setAccessible(true);
        field.set(store, clock);
        if (field.get(store) != clock) {
            throw new IllegalStateException("could not install the fixed clock");
        }
        return clock;
    }

    static Field findField(Class<?> type, String name) throws NoSuchFieldException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getName().equals(name)) {
                    return f;
                }
            }
        }
        throw new NoSuchFieldException(type.getName() + "." + name);
    }
}
