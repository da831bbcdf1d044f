package zync.delta;

import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * One table of the project's in the catalog's database (the commit claims, the egress leases), as
 * one process reaches it: one connection, made with the table when needed, its calls one at a time.
 */
final class CatalogTable {

    interface Call<T> {
        T apply(Connection connection) throws SQLException;
    }

    private final CatalogDatabase database;
    private final String description;
    private final CatalogDatabase.TableDefinition definition;
    private final boolean duplicateKeyFails;
    private Connection connection;

    /**
     * `description` names the table in an error; `duplicateKeyFails`: a duplicate key a call did not
     * handle ends the call at once rather than being tried again on a new connection.
     */
    CatalogTable(CatalogDatabase database, String description, CatalogDatabase.TableDefinition definition,
                 boolean duplicateKeyFails) {
        this.database = database;
        this.description = description;
        this.definition = definition;
        this.duplicateKeyFails = duplicateKeyFails;
    }

    /** Run `call` on the connection, made (with the table) if needed; once more on a new connection
     * if the old one failed (a database restarted since). */
    <T> T call(Call<T> call) throws IOException {
        SQLException first = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                return call.apply(connection());
            } catch (SQLException e) {
                if (duplicateKeyFails && CatalogDatabase.DUPLICATE_KEY.equals(e.getSQLState())) {
                    throw new IOException(e);
                }
                first = first == null ? e : first;
                CatalogDatabase.closeQuietly(connection);
                connection = null;
            }
        }
        throw new IOException(description + " in the catalog's database " + database.redacted()
            + " did not answer: " + first.getMessage(), first);
    }

    private Connection connection() throws SQLException {
        if (connection == null || connection.isClosed()) {
            connection = database.connect(definition);
        }
        return connection;
    }
}
