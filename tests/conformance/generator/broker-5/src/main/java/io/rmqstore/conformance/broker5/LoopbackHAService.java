package io.rmqstore.conformance.broker5;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.ha.DefaultHAService;

/**
 * DefaultHAService whose master listener binds 127.0.0.1:haListenPort instead of the wildcard address
 * ({@code new InetSocketAddress(haListenPort)} in AcceptSocketService). DefaultMessageStore picks it up through
 * RocketMQ's ServiceProvider ({@code META-INF/service/org.apache.rocketmq.store.ha.HAService}); it calls init()
 * and then start(), which binds.
 */
public final class LoopbackHAService extends DefaultHAService {
    @Override
    public void init(DefaultMessageStore store) throws IOException {
        super.init(store);
        try {
            Field address = DefaultHAService.AcceptSocketService.class.getDeclaredField("socketAddressListen");
            address.setAccessible(true);
            address.set(acceptSocketService, new InetSocketAddress(LoopbackCluster.LOOPBACK,
                store.getMessageStoreConfig().getHaListenPort()));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot rebind the HA listener to loopback", e);
        }
    }
}
