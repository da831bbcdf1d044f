package zync.delta;

import com.amazonaws.services.s3.model.DeleteObjectsRequest;
import com.amazonaws.services.s3.model.PutObjectRequest;
import java.io.ByteArrayInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
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
}
