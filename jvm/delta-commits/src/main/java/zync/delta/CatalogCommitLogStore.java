package zync.delta;

import io.delta.storage.HadoopFileSystemLogStore;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delta's log store for tables on S3 and S3-compatible stores, safe with several writer processes.
 *
 * <p>Delta commits version N by writing _delta_log/N.json only if it does not exist; the first
 * writer wins and the others retry on the newer table. S3 has no such write for Spark's Delta
 * (its PUT replaces an object; conditional writes are not in Delta 3.3's S3 store, and many
 * S3-compatible servers ignore them), so Delta's own S3 store is safe for one process only, and
 * its multi-process store needs DynamoDB. This store claims each commit in a table of the
 * catalog's database instead (CommitTable), whose primary key lets one claim of a version win:
 *
 * <ol>
 *   <li>the commit's content is written to a temporary object, _delta_log/.tmp/N.json.UUID;</li>
 *   <li>its row is inserted (table, N.json, the temporary object): a second writer's insert fails,
 *       and that writer gets Delta's FileAlreadyExistsException, as on a file system;</li>
 *   <li>the content is published as N.json and the row marked published.</li>
 * </ol>
 *
 * <p>After step 2 the commit is made whatever happens to its writer: a reader or writer of the table
 * that finds the newest row unpublished publishes it from the temporary object before it lists the
 * log, so no process sees a log missing a claimed version. This is the protocol of Delta's
 * DynamoDB log store (BaseExternalLogStore), over JDBC; its base class is not on Maven Central.
 *
 * <p>Only commit files (N.json) are claimed. Other files Delta writes without overwrite
 * (checksums) are derived from the commits and written if absent.
 */
public class CatalogCommitLogStore extends HadoopFileSystemLogStore {

    private static final Logger LOG = LoggerFactory.getLogger(CatalogCommitLogStore.class);
    private static final Pattern COMMIT_FILE = Pattern.compile("\\d{20}\\.json");
    private static final String TEMP_FOLDER = ".tmp";

    public CatalogCommitLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        Path target = fs.makeQualified(path);
        byte[] content = lines(actions);
        if (overwrite) {
            put(fs, target, content);  // one PUT: readers see the old object or the new one
            return;
        }
        if (!COMMIT_FILE.matcher(target.getName()).matches()) {
            if (ObjectRequests.exists(fs, target)) {
                throw new FileAlreadyExistsException(target.toString());
            }
            put(fs, target, content);
            return;
        }
        Path log = target.getParent();
        CommitTable commits = CommitTable.forConf(hadoopConf);
        publishClaimed(fs, commits, log);
        if (ObjectRequests.exists(fs, target)) {
            throw new FileAlreadyExistsException(target.toString());
        }
        Path temp = new Path(new Path(log, TEMP_FOLDER), target.getName() + "." + UUID.randomUUID());
        put(fs, temp, content);
        if (!commits.claim(log.toString(), target.getName(), temp.toString())
                && !(forgetRemoved(fs, commits, log, target)
                     && commits.claim(log.toString(), target.getName(), temp.toString()))) {
            deleteQuietly(fs, temp);
            throw new FileAlreadyExistsException(target.toString());
        }
        // The commit is made: its row names its content. A failure to publish it now is not this
        // commit's failure (Delta would retry a version another process may publish meanwhile);
        // the next reader or writer of the table publishes it.
        try {
            put(fs, target, content);
            commits.published(log.toString(), target.getName());
            deleteQuietly(fs, temp);
        } catch (IOException | RuntimeException e) {
            LOG.warn("commit {} is claimed but not yet published ({}); the table's next reader publishes it",
                     target, e.toString());
        }
    }

    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        Path log = fs.makeQualified(path).getParent();
        publishClaimed(fs, CommitTable.forConf(hadoopConf), log);
        if (!ObjectRequests.isS3A(fs)) {
            return super.listFrom(path, hadoopConf);
        }
        return Arrays.asList(ObjectRequests.listFrom(fs, log, path.getName())).iterator();
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;  // an object appears whole when its upload completes
    }

    /**
     * Forget the claim of `target` if it belongs to a log that was removed since (a table dropped, then
     * made again in its folder): it is published, yet its file is not there. Whether it did. A claim
     * not yet published is never forgotten here: its writer may be publishing it now.
     */
    private static boolean forgetRemoved(FileSystem fs, CommitTable commits, Path log, Path target) throws IOException {
        CommitTable.Claim claim = commits.claimOf(log.toString(), target.getName());
        if (claim == null || !claim.published() || ObjectRequests.exists(fs, target)) {
            return false;
        }
        commits.forget(log.toString(), target.getName());
        LOG.info("forgot the claim of {}: its log was removed since it was published", target);
        return true;
    }

    /** Publish the log's newest claimed commit if its writer did not (it died or failed after claiming it). */
    private static void publishClaimed(FileSystem fs, CommitTable commits, Path log) throws IOException {
        CommitTable.Claim claim = commits.latest(log.toString());
        if (claim == null || claim.published()) {
            return;
        }
        Path target = new Path(log, claim.fileName());
        if (!ObjectRequests.exists(fs, target)) {
            byte[] content;
            try {
                content = read(fs, new Path(claim.tempPath()));
            } catch (FileNotFoundException e) {
                // Its writer published it and removed the temporary object since the row was read; or,
                // neither being there, the claim is of a log removed since (a writer writes the
                // content before it claims, and removes it only after publishing).
                if (!ObjectRequests.exists(fs, target)) {
                    commits.forget(log.toString(), claim.fileName());
                    LOG.info("forgot the claim of {}: its log was removed since it was claimed", target);
                    return;
                }
                content = null;
            }
            if (content != null) {
                put(fs, target, content);
                LOG.info("published commit {}, claimed by a writer that did not publish it", target);
            }
        }
        commits.published(log.toString(), claim.fileName());
    }

    private static byte[] lines(Iterator<String> actions) {
        StringBuilder text = new StringBuilder();
        while (actions.hasNext()) {
            text.append(actions.next()).append('\n');
        }
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void put(FileSystem fs, Path path, byte[] content) throws IOException {
        ObjectRequests.put(fs, path, content);
    }

    private static byte[] read(FileSystem fs, Path path) throws IOException {
        try (InputStream in = fs.open(path)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            return out.toByteArray();
        }
    }

    private static void deleteQuietly(FileSystem fs, Path path) {
        try {
            ObjectRequests.delete(fs, path);
        } catch (IOException | RuntimeException e) {
            LOG.debug("could not remove {}: {}", path, e.toString());
        }
    }
}
