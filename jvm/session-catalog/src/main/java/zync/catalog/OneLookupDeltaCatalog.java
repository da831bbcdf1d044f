package zync.catalog;

import java.lang.reflect.Field;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.delta.catalog.DeltaCatalog;
import org.apache.spark.sql.execution.datasources.v2.V2SessionCatalog;

/**
 * Delta's session catalog over {@link OneLookupSessionCatalog}: every table Delta's catalog loads
 * by name, it asks the shared catalog for with one call. Named by spark.sql.catalog.spark_catalog
 * in profiles/profiles.yml, in place of Delta's own DeltaCatalog, which it is in every other way.
 *
 * <p>Spark hands a catalog extension its session's V2SessionCatalog after creating it
 * (setDelegateCatalog, final); the first table lookup replaces that delegate by one over the same
 * session catalog, so the session's current database, temporary views and functions are the ones
 * Spark's own delegate would use.
 */
public class OneLookupDeltaCatalog extends DeltaCatalog {
  private volatile boolean oneLookup;

  @Override
  public Table loadTable(Identifier ident) {
    useOneLookup();
    return super.loadTable(ident);
  }

  @Override
  public Table loadTable(Identifier ident, String version) {
    useOneLookup();
    return super.loadTable(ident, version);
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) {
    useOneLookup();
    return super.loadTable(ident, timestamp);
  }

  private void useOneLookup() {
    if (!oneLookup) {
      replaceDelegate();
    }
  }

  private synchronized void replaceDelegate() {
    if (oneLookup || delegate == null) {
      return;
    }
    // Exactly Spark's own class: a delegate of another kind (another extension's) is left as it is.
    if (delegate.getClass() == V2SessionCatalog.class) {
      try {
        Field catalog = V2SessionCatalog.class.getDeclaredField("catalog");
        catalog.setAccessible(true);
        delegate = new OneLookupSessionCatalog((SessionCatalog) catalog.get(delegate));
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("Spark's V2SessionCatalog has no session catalog field: "
            + "this class is built for Spark 3.5 (jvm/session-catalog)", e);
      }
    }
    oneLookup = true;
  }
}
