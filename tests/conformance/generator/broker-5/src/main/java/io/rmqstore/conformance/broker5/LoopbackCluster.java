package io.rmqstore.conformance.broker5;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * An in-process name server and one master broker (docs/format.md §9.3) that listen on 127.0.0.1 only, on free ports:
 * name server, broker (brokerIP1 = 127.0.0.1, so the store host of every record is 127.0.0.1:brokerPort), the
 * broker's "fast" server on brokerPort - 2, and the store's HA listener ({@link LoopbackHAService}).
 */
final class LoopbackCluster {
    static final String LOOPBACK = "127.0.0.1";
    static final String CLUSTER_NAME = "ConformanceCluster";
    static final String BROKER_NAME = "broker-e2e";
    static final long REGISTRATION_TIMEOUT_MILLIS = 10_000;
    static final int ROUTE_POLL_MILLIS = 1000;

    private final NamesrvController namesrv;
    private final BrokerController broker;
    private final String namesrvAddr;

    private LoopbackCluster(NamesrvController namesrv, BrokerController broker, String namesrvAddr) {
        this.namesrv = namesrv;
        this.broker = broker;
        this.namesrvAddr = namesrvAddr;
    }

    /** Starts a name server (its kv/config files under {@code workDir}) and a broker on {@code storeConfig}. */
    static LoopbackCluster start(MessageStoreConfig storeConfig, Path workDir) throws Exception {
        return start(storeConfig, workDir, brokerConfig -> { });
    }

    /** {@link #start(MessageStoreConfig, Path)} with broker settings of a scenario ({@code brokerSettings}). */
    static LoopbackCluster start(MessageStoreConfig storeConfig, Path workDir, Consumer<BrokerConfig> brokerSettings)
        throws Exception {
        NamesrvConfig namesrvConfig = new NamesrvConfig();
        namesrvConfig.setRocketmqHome(workDir.toString());
        namesrvConfig.setKvConfigPath(workDir.resolve("namesrv-kvConfig.json").toString());
        namesrvConfig.setConfigStorePath(workDir.resolve("namesrv.properties").toString());
        NettyServerConfig namesrvNetty = loopbackServer(freePort());
        NamesrvController namesrv = new NamesrvController(namesrvConfig, namesrvNetty);
        if (!namesrv.initialize()) {
            throw new IllegalStateException("NamesrvController.initialize() failed");
        }
        namesrv.start();
        String namesrvAddr = LOOPBACK + ":" + namesrvNetty.getListenPort();

        int brokerPort = freeBrokerPort();
        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setRocketmqHome(workDir.toString());
        brokerConfig.setBrokerClusterName(CLUSTER_NAME);
        brokerConfig.setBrokerName(BROKER_NAME);
        brokerConfig.setBrokerIP1(LOOPBACK);
        brokerConfig.setBrokerIP2(LOOPBACK);
        brokerConfig.setListenPort(brokerPort);
        brokerConfig.setNamesrvAddr(namesrvAddr);
        brokerSettings.accept(brokerConfig);
        storeConfig.setHaListenPort(freePort());
        BrokerController broker = new BrokerController(brokerConfig, loopbackServer(brokerPort),
            new NettyClientConfig(), storeConfig);
        if (!broker.initialize()) {
            throw new IllegalStateException("BrokerController.initialize() failed");
        }
        if (!(((DefaultMessageStore) broker.getMessageStore()).getHaService() instanceof LoopbackHAService)) {
            throw new IllegalStateException("META-INF/service did not install LoopbackHAService");
        }
        broker.start();
        awaitRegistration(namesrv, broker);
        return new LoopbackCluster(namesrv, broker, namesrvAddr);
    }

    /**
     * BrokerController.start() registers with the name server, but a failed first attempt is only retried by the
     * 10 s periodic task. A one-topic registration (registerIncrementBrokerData) from a broker the name server does
     * not know leaves an empty BrokerData behind and is refused (RouteInfoManager.registerBroker), so "known" means
     * the broker's address is listed, i.e. a full registration (all its topic configs) was accepted.
     */
    private static void awaitRegistration(NamesrvController namesrv, BrokerController broker) throws InterruptedException {
        long deadline = System.currentTimeMillis() + REGISTRATION_TIMEOUT_MILLIS;
        while (!registered(namesrv)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("broker not registered with the name server");
            }
            Thread.sleep(200);
            broker.registerBrokerAll(true, false, true);
        }
    }

    private static boolean registered(NamesrvController namesrv) {
        BrokerData data = namesrv.getRouteInfoManager().getAllClusterInfo().getBrokerAddrTable().get(BROKER_NAME);
        return data != null && data.getBrokerAddrs().containsKey(MixAll.MASTER_ID);
    }

    /** A client of this cluster: its name server, {@code instanceName}, no VIP channel, routes polled every second. */
    <T extends ClientConfig> T client(T config, String instanceName) {
        config.setNamesrvAddr(namesrvAddr);
        config.setInstanceName(instanceName);
        config.setVipChannelEnabled(false);
        config.setPollNameServerInterval(ROUTE_POLL_MILLIS);
        return config;
    }

    /** A condition polled by {@link #await}; may throw. */
    interface Condition {
        boolean holds() throws Exception;
    }

    /** Polls {@code condition} every 50 ms until it holds; fails naming {@code what} after {@code timeoutMillis}. */
    static void await(String what, long timeoutMillis, Condition condition) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (!condition.holds()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(what + " did not happen within " + timeoutMillis + " ms");
            }
            Thread.sleep(50);
        }
    }

    String namesrvAddr() {
        return namesrvAddr;
    }

    String brokerAddr() {
        return broker.getBrokerAddr();
    }

    BrokerController broker() {
        return broker;
    }

    DefaultMessageStore store() {
        return (DefaultMessageStore) broker.getMessageStore();
    }

    /** Clean broker shutdown (flushes, persists config/*.json, deletes abort), then the name server. */
    void shutdown() {
        broker.shutdown();
        namesrv.shutdown();
    }

    private static NettyServerConfig loopbackServer(int port) {
        NettyServerConfig c = new NettyServerConfig();
        c.setBindAddress(LOOPBACK);
        c.setListenPort(port);
        return c;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(LOOPBACK))) {
            return s.getLocalPort();
        }
    }

    /** A free port p whose p - 2 (the broker's fast remoting server) is free as well. */
    private static int freeBrokerPort() throws IOException {
        for (int attempt = 0; attempt < 50; attempt++) {
            int port = freePort();
            if (port > 1026 && isFree(port - 2)) {
                return port;
            }
        }
        throw new IOException("no free loopback port pair for the broker");
    }

    private static boolean isFree(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName(LOOPBACK))) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
