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

import java.net.InetAddress;
import java.net.InetSocketAddress;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.RetryingHMSHandler;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.thrift.TUGIContainingTransport;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;

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
}
