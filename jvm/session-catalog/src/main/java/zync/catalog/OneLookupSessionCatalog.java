package zync.catalog;

import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchDatabaseException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.execution.datasources.v2.V2SessionCatalog;
import scala.Option;

/**
 * Spark's session catalog (V2SessionCatalog), looking a table up with one call to the external
 * catalog.
 *
 * <p>Spark's loadTable asks the metastore whether the table's database exists, then whether the
 * table exists, then for the table (SessionCatalog.getTableRawMetadata): three calls, each a
 * round trip to the shared catalog's database, and Spark runs one call at a time for the whole
 * process (HiveExternalCatalog's calls are synchronized). Every statement that names a table
 * makes that lookup, often several times (a view and the tables under it), so a database's
 * first mirror builds spent two fifths of their statement time in those calls. The third call
 * alone answers all three questions: the metastore's getTable fails with NoSuchTableException
 * for a table or a database that does not exist. The table returned is the one Spark's
 * getTableMetadata returns (its identifier naming the session catalog, CHAR and VARCHAR columns
 * read as strings); nothing is cached, so a table another process creates, alters or drops is
 * seen by the next statement as before.
 */
public class OneLookupSessionCatalog extends V2SessionCatalog {
  private final SessionCatalog sessionCatalog;

  public OneLookupSessionCatalog(SessionCatalog sessionCatalog) {
    super(sessionCatalog);
    this.sessionCatalog = sessionCatalog;
  }

  @Override
  public Table loadTable(Identifier ident) {
    TableIdentifier name = sessionCatalog.qualifyIdentifier(TableIdentifierHelper(ident).asTableIdentifier());
    CatalogTable table;
    try {
      table = sessionCatalog.externalCatalog().getTable(name.database().get(), name.table());
    } catch (Exception e) {
      if (e instanceof NoSuchTableException || e instanceof NoSuchDatabaseException) {
        throw OneLookupSessionCatalog.<RuntimeException>unchecked(QueryCompilationErrors.noSuchTableError(ident));
      }
      throw e;
    }
    TableIdentifier named = new TableIdentifier(table.identifier().table(), table.identifier().database(),
        Option.apply(CatalogManager.SESSION_CATALOG_NAME()));
    return new V1Table(table.copy(named, table.tableType(), table.storage(),
        CharVarcharUtils.replaceCharVarcharWithStringInSchema(table.schema()), table.provider(),
        table.partitionColumnNames(), table.bucketSpec(), table.owner(), table.createTime(),
        table.lastAccessTime(), table.createVersion(), table.properties(), table.stats(), table.viewText(),
        table.comment(), table.unsupportedFeatures(), table.tracksPartitionsInCatalog(),
        table.schemaPreservesCase(), table.ignoredProperties(), table.viewOriginalText()));
  }

  /** Scala's methods throw checked exceptions undeclared; Spark's loadTable throws this one so. */
  @SuppressWarnings("unchecked")
  private static <E extends Exception> E unchecked(Exception e) throws E {
    throw (E) e;
  }
}
