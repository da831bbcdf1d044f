package zync.delta;

import com.amazonaws.services.s3.model.DeleteObjectsRequest;
import com.amazonaws.services.s3.model.PutObjectRequest;
import java.io.ByteArrayInputStream;
import java.io.FileNotFoundException;
import com.amazonaws.services.s3.model.ListObjectsV2Request;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.s3a.Constants;
import org.apache.hadoop.fs.s3a.Listing;
import org.apache.hadoop.fs.s3a.S3AFileStatus;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import org.apache.hadoop.fs.s3a.S3AUtils;
import org.apache.hadoop.fs.s3a.S3ListRequest;
import org.apache.hadoop.fs.s3a.WriteOperationHelper;

/**
 * A whole small object written, probed or removed on S3 in one request each.
 *
 * <p>S3A's FileSystem calls probe around each of these: create() lists the path to refuse writing
 * over a "folder", exists() follows a missing object's HEAD with a LIST, delete() asks for the
 * object's status first and then lists its parent to put a "folder" marker back. Each probe is a
 * round trip to the store, and a Delta commit made of a few such calls paid more for the probes
 * than for its writes. A log's files are never folders, and markers are kept
 * (fs.s3a.directory.marker.retention), so the probes decide nothing here. Other file systems get
 * their own FileSystem calls.
 */
final class ObjectRequests {

    /** A log file's version, first in its name; a listing block is the versions sharing all its digits but the last two. */
    private static final Pattern VERSIONED = Pattern.compile("\\d{20}\\..*");
    private static final int BLOCK_DIGITS = 18;

    private ObjectRequests() {}

    static boolean isS3A(FileSystem fs) {
        return fs instanceof S3AFileSystem;
    }

    /** Whether an object is at `path`: one HEAD. */
    static boolean exists(FileSystem fs, Path path) throws IOException {
        if (!isS3A(fs)) {
            return fs.exists(path);
        }
        try {
            ((S3AFileSystem) fs).getObjectMetadata(path);
            return true;
        } catch (FileNotFoundException e) {
            return false;
        }
    }

    /** Write `content` as the object at `path`, replacing any: one PUT, seen whole or not at all. */
    static void put(FileSystem fs, Path path, byte[] content) throws IOException {
        if (!isS3A(fs)) {
            try (FSDataOutputStream out = fs.create(path, true)) {
                out.write(content);
            }
            return;
        }
        S3AFileSystem s3a = (S3AFileSystem) fs;
        WriteOperationHelper writer = s3a.getWriteOperationHelper();
        PutObjectRequest request = writer.createPutObjectRequest(
            s3a.pathToKey(s3a.makeQualified(path)), new ByteArrayInputStream(content), content.length, new HashMap<>());
        writer.putObject(request);
    }

    /** Remove the object at `path` if it is there: one DELETE. */
    static void delete(FileSystem fs, Path path) throws IOException {
        if (!isS3A(fs)) {
            fs.delete(path, false);
            return;
        }
        S3AFileSystem s3a = (S3AFileSystem) fs;
        s3a.removeKeys(List.of(new DeleteObjectsRequest.KeyVersion(s3a.pathToKey(s3a.makeQualified(path)))), false, null);
    }

    /**
     * The files of the folder `log` (an S3A path) named `start` or after, in name order, as
     * HadoopFileSystemLogStore.listFrom gives them.
     *
     * <p>That one lists the whole folder (after probing it): a long-lived table's log holds thousands of
     * files, listed again at every snapshot update, some pages of a thousand each, every one a request
     * that also makes the store look at every file under the prefix. Here a log file's listing starts
     * at `start` (S3's start-after), and a versioned start is listed by the prefix of its hundred
     * versions, then of the next hundred while the one before held its last version: a log's
     * versions are contiguous, so a block missing its last version ends the log. A block holding
     * nothing of the log (versions cleaned up before it, or none yet) and any other start are
     * listed from `start` over the whole folder, as Delta's own S3 store lists it.
     */
    static FileStatus[] listFrom(FileSystem fs, Path log, String start) throws IOException {
        S3AFileSystem s3a = (S3AFileSystem) fs;
        Path from = new Path(log, start);
        if (!VERSIONED.matcher(start).matches()) {
            return wholeFolderFrom(s3a, from, log);
        }
        String folder = s3a.pathToKey(log) + "/";
        List<FileStatus> found = new ArrayList<>();
        String block = start.substring(0, BLOCK_DIGITS);
        boolean first = true;
        while (true) {
            List<FileStatus> listed = list(s3a, log, folder + block, null);
            if (first && listed.isEmpty()) {
                return wholeFolderFrom(s3a, from, log);
            }
            first = false;
            boolean last = false;
            for (FileStatus status : listed) {
                String name = status.getPath().getName();
                if (name.compareTo(start) >= 0) {
                    found.add(status);
                }
                last |= name.startsWith(block + "99.json");
            }
            if (!last) {
                return found.toArray(new FileStatus[0]);
            }
            block = String.format("%0" + BLOCK_DIGITS + "d", Long.parseLong(block) + 1);
        }
    }

    /** The folder's files from `from` on, as Delta's own S3 store lists them (S3's start-after); FileNotFoundException,
     * as a file system's listing, for a folder not there. */
    private static FileStatus[] wholeFolderFrom(S3AFileSystem s3a, Path from, Path log) throws IOException {
        String key = s3a.pathToKey(from);
        // The greatest key below `key`'s that no log file has: `key` itself is listed.
        String before = key.substring(0, key.length() - 1) + (char) (key.charAt(key.length() - 1) - 1);
        List<FileStatus> listed = list(s3a, log, s3a.pathToKey(log) + "/", before);
        if (listed.isEmpty() && !s3a.exists(log)) {
            throw new FileNotFoundException("no such folder: " + log);
        }
        return listed.toArray(new FileStatus[0]);
    }

    /** The files directly in `log` whose keys start with `prefix` (and follow `startAfter`, if given), in key order. */
    private static List<FileStatus> list(S3AFileSystem s3a, Path log, String prefix, String startAfter)
            throws IOException {
        int pageSize = S3AUtils.intOption(s3a.getConf(), Constants.MAX_PAGING_KEYS, Constants.DEFAULT_MAX_PAGING_KEYS, 1);
        ListObjectsV2Request v2 = new ListObjectsV2Request().withBucketName(s3a.getBucket())
            .withMaxKeys(pageSize).withPrefix(prefix).withDelimiter("/");
        if (startAfter != null) {
            v2.setStartAfter(startAfter);
        }
        S3ListRequest request = S3ListRequest.v2(v2);
        RemoteIterator<S3AFileStatus> statuses = s3a.getListing().createFileStatusListingIterator(
            log, request, path -> true, new Listing.AcceptAllButSelfAndS3nDirs(log), s3a.getActiveAuditSpan());
        List<FileStatus> listed = new ArrayList<>();
        while (statuses.hasNext()) {
            listed.add(statuses.next());
        }
        return listed;
    }
}
