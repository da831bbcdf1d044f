package zync.delta;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * Egress leases: which process publishes to an output topic now, one row a (Kafka cluster, topic)
 * in the catalog's database (the one CommitTable claims commits in), so that egresses of one topic
 * on different machines take turns.
 *
 * <p>A row names its holder, its time to live (the holder's: it renews within it) and a renewal
 * count that every renewal moves on. A lease is free to take once the caller has seen the same
 * holder and count for a whole time to live by its own monotonic clock: the holder renews four
 * times a time to live, so a lease that did not move for one has a holder that stopped. No clock
 * is compared with another's: a machine's, or the database's, set forward or back changes no
 * lease. (The row's RENEWED_AT, the database's time of the last renewal, is for people reading it.)
 * Taking a lease is one statement that succeeds only if the row is still as seen (same holder,
 * same count), so of two processes taking a lease at once one wins; a new lease is an insert,
 * which the primary key lets one process win.
 *
 * <p>One connection a database and process, its calls one at a time (a call is one or two short
 * statements); a connection that failed is made again once per call.
 */
public final class EgressLease {

    static final String TABLE = "ZYNC_EGRESS_LEASES";
    private static final String DUPLICATE_KEY = CatalogDatabase.DUPLICATE_KEY;
    private static final Map<String, EgressLease> BY_DATABASE = new HashMap<>();

    /** A lease as this process last saw it held by another, and since when (System.nanoTime). */
    private record Seen(String holder, long beat, long since) {}

    private final CatalogTable table;
    private final Map<String, Seen> seen = new HashMap<>();

    private EgressLease(CatalogDatabase database) {
        this.table = new CatalogTable(database, "the egress leases " + TABLE, opened -> "CREATE TABLE " + TABLE + " ("
            + "LEASE_KEY CHAR(64) NOT NULL, NAME VARCHAR(1000) NOT NULL, OWNER VARCHAR(1000) NOT NULL, "
            + "TTL_MS BIGINT NOT NULL, BEAT BIGINT NOT NULL, RENEWED_AT " + timestampType(opened) + " NOT NULL, "
            + "PRIMARY KEY (LEASE_KEY))", false);
    }

    /** The leases in the database `conf` names (as commit claims find theirs). */
    public static synchronized EgressLease forConf(Configuration conf) throws IOException {
        CatalogDatabase database = CatalogDatabase.forConf(conf, "egresses of one topic take turns by a lease");
        return BY_DATABASE.computeIfAbsent(database.key(), key -> new EgressLease(database));
    }

    /**
     * Take the lease `key` (`name` says what it is, for people reading the table) for `owner`, who
     * renews it within `ttlMillis`: true if `owner` holds it now: it was free, or `owner`'s already
     * (renewed), or this process has seen it unrenewed for its holder's time to live (taken over).
     * A caller waiting for a lease calls this again and again: each call is a look at the row.
     */
    public synchronized boolean acquire(String key, String name, String owner, long ttlMillis) throws IOException {
        return table.call(connection -> {
            try (PreparedStatement select = connection.prepareStatement(
                    "SELECT OWNER, BEAT, TTL_MS FROM " + TABLE + " WHERE LEASE_KEY = ?")) {
                select.setString(1, key);
                try (ResultSet row = select.executeQuery()) {
                    if (!row.next()) {
                        seen.remove(key);
                        return insert(connection, key, name, owner, ttlMillis);
                    }
                    String holder = row.getString(1);
                    long beat = row.getLong(2);
                    long holderTtlNanos = row.getLong(3) * 1_000_000L;
                    if (holder.equals(owner)) {
                        return renew(connection, key, owner);
                    }
                    long now = System.nanoTime();
                    Seen before = seen.get(key);
                    if (before == null || !before.holder().equals(holder) || before.beat() != beat) {
                        seen.put(key, new Seen(holder, beat, now));
                        return false;
                    }
                    if (now - before.since() < holderTtlNanos) {
                        return false;
                    }
                    seen.remove(key);
                    return takeOver(connection, key, holder, beat, owner, ttlMillis);
                }
            }
        });
    }

    /** Renew `owner`'s lease `key`: false if `owner` no longer holds it (another took it over). */
    public synchronized boolean renew(String key, String owner) throws IOException {
        return table.call(connection -> renew(connection, key, owner));
    }

    /** Take the lease `key` from `holder`, whatever its age: the caller knows `holder` is gone
     * (it held a lock of this machine that the caller holds now). False if `holder` no longer has it. */
    public synchronized boolean takeFrom(String key, String holder, String owner, long ttlMillis) throws IOException {
        return table.call(connection -> {
            try (PreparedStatement update = connection.prepareStatement("UPDATE " + TABLE + " SET OWNER = ?, TTL_MS = ?,"
                    + " BEAT = BEAT + 1, RENEWED_AT = CURRENT_TIMESTAMP WHERE LEASE_KEY = ? AND OWNER = ?")) {
                update.setString(1, owner);
                update.setLong(2, ttlMillis);
                update.setString(3, key);
                update.setString(4, holder);
                return update.executeUpdate() == 1;
            }
        });
    }

    /** Give up `owner`'s lease `key`: false if `owner` did not hold it. */
    public synchronized boolean release(String key, String owner) throws IOException {
        return table.call(connection -> {
            try (PreparedStatement delete = connection.prepareStatement(
                    "DELETE FROM " + TABLE + " WHERE LEASE_KEY = ? AND OWNER = ?")) {
                delete.setString(1, key);
                delete.setString(2, owner);
                return delete.executeUpdate() == 1;
            }
        });
    }

    /** Who holds the lease `key` and how long ago they renewed it (by the database's clock, for a
     * message): "owner\nmillis", or null. */
    public synchronized String holder(String key) throws IOException {
        return table.call(connection -> {
            try (PreparedStatement select = connection.prepareStatement(
                    "SELECT OWNER, RENEWED_AT, CURRENT_TIMESTAMP FROM " + TABLE + " WHERE LEASE_KEY = ?")) {
                select.setString(1, key);
                try (ResultSet row = select.executeQuery()) {
                    if (!row.next()) {
                        return null;
                    }
                    return row.getString(1) + "\n" + (row.getTimestamp(3).getTime() - row.getTimestamp(2).getTime());
                }
            }
        });
    }

    private static boolean insert(Connection connection, String key, String name, String owner, long ttlMillis)
            throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + TABLE
                + " (LEASE_KEY, NAME, OWNER, TTL_MS, BEAT, RENEWED_AT) VALUES (?, ?, ?, ?, 0, CURRENT_TIMESTAMP)")) {
            insert.setString(1, key);
            insert.setString(2, name.length() > 1000 ? name.substring(0, 1000) : name);
            insert.setString(3, owner);
            insert.setLong(4, ttlMillis);
            insert.executeUpdate();
            return true;
        } catch (SQLException e) {
            if (DUPLICATE_KEY.equals(e.getSQLState())) {
                return false;  // another process inserted it first: it holds the lease
            }
            throw e;
        }
    }

    private static boolean renew(Connection connection, String key, String owner) throws SQLException {
        try (PreparedStatement update = connection.prepareStatement("UPDATE " + TABLE
                + " SET BEAT = BEAT + 1, RENEWED_AT = CURRENT_TIMESTAMP WHERE LEASE_KEY = ? AND OWNER = ?")) {
            update.setString(1, key);
            update.setString(2, owner);
            return update.executeUpdate() == 1;
        }
    }

    /** Take the lease from `holder` if the row is still as read (same holder, same renewal count). */
    private static boolean takeOver(Connection connection, String key, String holder, long beat, String owner,
            long ttlMillis) throws SQLException {
        try (PreparedStatement update = connection.prepareStatement("UPDATE " + TABLE
                + " SET OWNER = ?, TTL_MS = ?, BEAT = BEAT + 1, RENEWED_AT = CURRENT_TIMESTAMP"
                + " WHERE LEASE_KEY = ? AND OWNER = ? AND BEAT = ?")) {
            update.setString(1, owner);
            update.setLong(2, ttlMillis);
            update.setString(3, key);
            update.setString(4, holder);
            update.setLong(5, beat);
            return update.executeUpdate() == 1;
        }
    }

    /** PostgreSQL's TIMESTAMP would keep the writer's local time, read as the reader's: an instant there. */
    private static String timestampType(Connection connection) throws SQLException {
        return connection.getMetaData().getDatabaseProductName().toLowerCase().contains("postgres")
            ? "TIMESTAMP WITH TIME ZONE" : "TIMESTAMP";
    }
}
