package zync.delta;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The commits claimed on tables of an object store: one row a commit file, keyed by the table's
 * log folder and the file's name, in a database every writer process reaches (the catalog's).
 *
 * <p>A row is inserted before its commit file is published; the primary key lets one insert of a
 * version win, whichever process or thread makes it, which S3 itself (a PUT replaces an object)
 * cannot promise. The row names the commit's content (a temporary object), so that any process
 * can publish a claimed commit whose writer died before it did.
 *
 * <p>One connection a database and process, its calls one at a time: a claim or a lookup is one
 * short statement, and a process commits to few tables at once.
 */
final class CommitTable {

    /** How long a published commit's row is kept, in hours (a writer that paused longer could re-claim it). */
    static final String RETENTION_KEY = "zync.delta.commits.retention.hours";

    static final String TABLE = "ZYNC_DELTA_COMMITS";
    private static final String DUPLICATE_KEY = CatalogDatabase.DUPLICATE_KEY;
    private static final long EXPIRY_EVERY_MS = 10 * 60 * 1000L;

    private static final Map<String, CommitTable> BY_URL = new HashMap<>();

    /** A claimed commit: its file's name, the object holding its content, whether it is published. */
    record Claim(String fileName, String tempPath, boolean published) {}

    private final CatalogTable table;
    private final long retentionMs;
    private long lastExpiry;

    private CommitTable(CatalogDatabase database, long retentionMs) {
        this.table = new CatalogTable(database, "the commit table " + TABLE, opened -> "CREATE TABLE " + TABLE + " ("
            + "TABLE_KEY CHAR(64) NOT NULL, FILE_NAME VARCHAR(64) NOT NULL, TABLE_PATH VARCHAR(4000) NOT NULL, "
            + "TEMP_PATH VARCHAR(4000) NOT NULL, PUBLISHED SMALLINT NOT NULL, CLAIMED_AT BIGINT NOT NULL, "
            + "PRIMARY KEY (TABLE_KEY, FILE_NAME))", true);
        this.retentionMs = retentionMs;
    }

    static synchronized CommitTable forConf(Configuration conf) throws IOException {
        CatalogDatabase database = CatalogDatabase.forConf(conf, "a commit to a table on an object store is claimed");
        long retentionMs = (long) (conf.getDouble(RETENTION_KEY, 24.0) * 3600 * 1000);
        CommitTable table = BY_URL.get(database.key());
        if (table == null) {
            table = new CommitTable(database, retentionMs);
            BY_URL.put(database.key(), table);
        }
        return table;
    }

    /** The key of a table's log folder: a digest, so that any path fits the database's key length. */
    static String tableKey(String logFolder) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            return HexFormat.of().formatHex(digest.digest(logFolder.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Claim `fileName` of the log in `logFolder`: true if this call inserted its row, false if another had. */
    synchronized boolean claim(String logFolder, String fileName, String tempPath) throws IOException {
        return table.call(connection -> {
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO " + TABLE + " (TABLE_KEY, FILE_NAME, TABLE_PATH, TEMP_PATH, PUBLISHED, CLAIMED_AT)"
                        + " VALUES (?, ?, ?, ?, 0, ?)")) {
                insert.setString(1, tableKey(logFolder));
                insert.setString(2, fileName);
                insert.setString(3, logFolder);
                insert.setString(4, tempPath);
                insert.setLong(5, System.currentTimeMillis());
                insert.executeUpdate();
                return true;
            } catch (SQLException e) {
                if (DUPLICATE_KEY.equals(e.getSQLState())) {
                    return false;
                }
                throw e;
            }
        });
    }

    /** The claim of `fileName` in the log in `logFolder`, or null. */
    synchronized Claim claimOf(String logFolder, String fileName) throws IOException {
        return selectClaim(" WHERE TABLE_KEY = ? AND FILE_NAME = ?", tableKey(logFolder), fileName);
    }

    /** Forget the claim of `fileName` in the log in `logFolder` (a claim of a log that was removed since). */
    synchronized void forget(String logFolder, String fileName) throws IOException {
        table.call(connection -> {
            onClaim(connection, "DELETE FROM " + TABLE + " WHERE TABLE_KEY = ? AND FILE_NAME = ?", logFolder, fileName);
            return null;
        });
    }

    /** Run `statement`, whose two parameters are a claim's table key and file name, on that claim. */
    private static void onClaim(Connection connection, String statement, String logFolder, String fileName)
            throws SQLException {
        try (PreparedStatement prepared = connection.prepareStatement(statement)) {
            prepared.setString(1, tableKey(logFolder));
            prepared.setString(2, fileName);
            prepared.executeUpdate();
        }
    }

    /** The newest claim of the log in `logFolder` (by file name: versions are zero-padded), or null. */
    synchronized Claim latest(String logFolder) throws IOException {
        return selectClaim(" WHERE TABLE_KEY = ? ORDER BY FILE_NAME DESC FETCH FIRST 1 ROWS ONLY", tableKey(logFolder));
    }

    private Claim selectClaim(String where, String... values) throws IOException {
        return table.call(connection -> {
            try (PreparedStatement select = connection.prepareStatement(
                    "SELECT FILE_NAME, TEMP_PATH, PUBLISHED FROM " + TABLE + where)) {
                for (int i = 0; i < values.length; i++) {
                    select.setString(i + 1, values[i]);
                }
                try (ResultSet rows = select.executeQuery()) {
                    return rows.next() ? new Claim(rows.getString(1), rows.getString(2), rows.getInt(3) != 0) : null;
                }
            }
        });
    }

    /** Record that a claimed commit's file is published; now and then forget published ones past the retention. */
    synchronized void published(String logFolder, String fileName) throws IOException {
        table.call(connection -> {
            onClaim(connection, "UPDATE " + TABLE + " SET PUBLISHED = 1 WHERE TABLE_KEY = ? AND FILE_NAME = ?",
                    logFolder, fileName);
            long now = System.currentTimeMillis();
            if (now - lastExpiry > EXPIRY_EVERY_MS) {
                lastExpiry = now;
                try (PreparedStatement expire = connection.prepareStatement(
                        "DELETE FROM " + TABLE + " WHERE PUBLISHED = 1 AND CLAIMED_AT < ?")) {
                    expire.setLong(1, now - retentionMs);
                    expire.executeUpdate();
                }
            }
            return null;
        });
    }
}
