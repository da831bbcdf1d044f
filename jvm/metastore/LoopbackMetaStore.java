// The catalog service `zync up --metastore` starts: Hive's metastore Thrift server (the Hive 2.3.9
// classes pyspark ships), its database in PostgreSQL, listening on one address only.
//
// Hive's own HiveMetaStore.main binds every interface (HiveAuthUtils.getServerSocket(null, port)),
// and the stack's services listen on loopback only; this builds the same server Hive's
// startMetaStore builds without SASL (a retrying handler, the UGI-carrying transport and
// processor, binary protocol) on the given address. Run as a source file (java ... this file),
// so it needs no build step; settings come from hive-site.xml on the class path.
//
// Arguments: ADDRESS PORT
package zync.metastore;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.jdo.PersistenceManager;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.ObjectStore;
import org.apache.hadoop.hive.metastore.RetryingHMSHandler;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.thrift.TUGIContainingTransport;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.datanucleus.api.jdo.JDOPersistenceManagerFactory;
import org.datanucleus.PersistenceNucleusContext;

public final class LoopbackMetaStore {
    private LoopbackMetaStore() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: LoopbackMetaStore ADDRESS PORT");
            System.exit(2);
        }
        InetSocketAddress address = new InetSocketAddress(InetAddress.getByName(args[0]), Integer.parseInt(args[1]));
        HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
        createSchema(conf);
        // The handler opens the database (creating the schema on first start) before the socket
        // exists, so a client that can connect finds a catalog that answers.
        IHMSHandler handler = RetryingHMSHandler.getProxy(
                conf, new HiveMetaStore.HMSHandler("zync metastore", conf, false), false);
        TServerSocket socket = new TServerSocket(address);
        TServer server = new TThreadPoolServer(new TThreadPoolServer.Args(socket)
                .processor(new TUGIBasedProcessor<>(handler))
                .transportFactory(new TUGIContainingTransport.Factory())
                .protocolFactory(new TBinaryProtocol.Factory())
                .inputProtocolFactory(new TBinaryProtocol.Factory(true, true,
                        conf.getLongVar(HiveConf.ConfVars.METASTORESERVERMAXMESSAGESIZE), -1))
                .minWorkerThreads(conf.getIntVar(HiveConf.ConfVars.METASTORESERVERMINTHREADS))
                .maxWorkerThreads(conf.getIntVar(HiveConf.ConfVars.METASTORESERVERMAXTHREADS)));
        System.out.println("metastore listening on " + address.getAddress().getHostAddress() + ":" + address.getPort());
        server.serve();
    }

    /**
     * Every table of the metastore's schema, created now where missing. DataNucleus would otherwise
     * create each one the first time a call needs it, on a connection of its own, while that call's
     * transaction holds locks on the tables it refers to: on PostgreSQL the first CREATE TABLE waits
     * for itself forever.
     */
    private static void createSchema(HiveConf conf) throws IOException {
        ObjectStore store = new ObjectStore();
        store.setConf(conf);
        PersistenceManager manager = store.getPersistenceManager();
        try {
            PersistenceNucleusContext context =
                    ((JDOPersistenceManagerFactory) manager.getPersistenceManagerFactory()).getNucleusContext();
            context.getStoreManager().manageClasses(
                    context.getClassLoaderResolver(LoopbackMetaStore.class.getClassLoader()),
                    modelClasses().toArray(new String[0]));
        } finally {
            manager.close();
            store.shutdown();
        }
    }

    /** The persistent classes Hive's package.jdo maps to tables (embedded-only ones have none). */
    private static List<String> modelClasses() throws IOException {
        String mapping;
        try (InputStream in = ObjectStore.class.getClassLoader().getResourceAsStream("package.jdo")) {
            if (in == null) {
                throw new IOException("package.jdo is not on the class path (hive-metastore's jar)");
            }
            mapping = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        List<String> classes = new ArrayList<>();
        Matcher matcher = Pattern.compile("<class name=\"(\\w+)\"([^>]*)>").matcher(mapping);
        while (matcher.find()) {
            if (!matcher.group(2).contains("embedded-only=\"true\"")) {
                classes.add("org.apache.hadoop.hive.metastore.model." + matcher.group(1));
            }
        }
        return classes;
    }
}
