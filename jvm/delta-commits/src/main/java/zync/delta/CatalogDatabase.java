package zync.delta;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;

/**
 * The database every process of the project reaches, as a process's Hadoop configuration names
 * it: `zync.delta.commits.url` (with its user and password or password file) when set, else the
 * metastore's own (`javax.jdo.option.ConnectionURL`). The commit claims (CommitTable) and the
 * egress leases (EgressLease) live there.
 */
record CatalogDatabase(String url, String user, Properties credentials) {

    /** The JDBC URL of the database (default: the metastore's own). */
    static final String URL_KEY = "zync.delta.commits.url";
    static final String USER_KEY = "zync.delta.commits.user";
    static final String PASSWORD_KEY = "zync.delta.commits.password";
    /** A file holding the password (its first line), for a password kept out of settings. */
    static final String PASSWORD_FILE_KEY = "zync.delta.commits.password.file";
    static final String METASTORE_URL_KEY = "javax.jdo.option.ConnectionURL";
    static final String METASTORE_USER_KEY = "javax.jdo.option.ConnectionUserName";
    static final String METASTORE_PASSWORD_KEY = "javax.jdo.option.ConnectionPassword";
    /** SQLSTATE of a duplicate key, Derby's and PostgreSQL's alike. */
    static final String DUPLICATE_KEY = "23505";

    /** A table of the project's in the database: its CREATE TABLE statement on a connection (types may
     * depend on the database the connection reaches). */
    interface TableDefinition {
        String createStatement(Connection connection) throws SQLException;
    }

    /** The database `conf` names; `purpose` says, in an error, what needs it. */
    static CatalogDatabase forConf(Configuration conf, String purpose) throws IOException {
        String url = conf.getTrimmed(URL_KEY, "");
        boolean own = !url.isEmpty();
        if (!own) {
            url = conf.getTrimmed(METASTORE_URL_KEY, "");
        }
        if (url.isEmpty()) {
            throw new IOException(purpose + " in the catalog's database, and this process names none: set spark.hadoop."
                + URL_KEY + " (a JDBC URL every writer process reaches; see the docs' object storage page)");
        }
        Properties credentials = new Properties();
        String user = conf.getTrimmed(own ? USER_KEY : METASTORE_USER_KEY, "");
        String password = conf.get(own ? PASSWORD_KEY : METASTORE_PASSWORD_KEY, "");
        String passwordFile = own ? conf.getTrimmed(PASSWORD_FILE_KEY, "") : "";
        if (!passwordFile.isEmpty()) {
            password = Files.readAllLines(Paths.get(passwordFile), StandardCharsets.UTF_8).get(0).trim();
        }
        if (!user.isEmpty()) {
            credentials.setProperty("user", user);
        }
        if (!password.isEmpty()) {
            credentials.setProperty("password", password);
        }
        return new CatalogDatabase(url, user, credentials);
    }

    /** A key for one database and user, the same for every call naming them. */
    String key() {
        return url + "\u0000" + user;
    }

    /** The URL with any password in it masked, for a message. */
    String redacted() {
        return url.replaceAll("(?i)(password=)[^;&]*", "$1***");
    }

    /** A new auto-commit connection, with `table` made in the database if it is not there yet. */
    Connection connect(TableDefinition table) throws SQLException {
        Connection connection = DriverManager.getConnection(url, credentials);
        connection.setAutoCommit(true);
        try (Statement create = connection.createStatement()) {
            create.executeUpdate(table.createStatement(connection));
        } catch (SQLException e) {
            // Made already (Derby's X0Y32, PostgreSQL's 42P07), or made meanwhile by another process
            // (PostgreSQL reports a type's duplicate key).
            String state = e.getSQLState();
            if (!"X0Y32".equals(state) && !"42P07".equals(state) && !DUPLICATE_KEY.equals(state)) {
                closeQuietly(connection);
                throw e;
            }
        }
        return connection;
    }

    static void closeQuietly(Connection connection) {
        try {
            if (connection != null) {
                connection.close();
            }
        } catch (SQLException ignored) {
            // a broken connection's close may fail too; a new one is made next
        }
    }
}
