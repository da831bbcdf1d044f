package zync.delta;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager;

/**
 * Spark's checkpoint file manager (spark.sql.streaming.checkpointFileManagerClass), through which Delta
 * writes each commit's checksum (N.crc), with an atomic create that is one PUT on S3.
 *
 * <p>The file system manager's atomic create writes a temporary file and renames it, which S3A does
 * by a copy and a delete between probes of both paths: about ten requests for a file of a few hundred
 * bytes, paid by every commit to a table on the store. An object appears whole when its upload
 * completes, so the content is kept in memory and uploaded once, at close; a cancelled stream uploads
 * nothing. Files on other file systems are written as the file system manager writes them.
 */
public class ObjectStoreCheckpointFileManager extends FileSystemBasedCheckpointFileManager {

    private final FileSystem fs;

    public ObjectStoreCheckpointFileManager(Path path, Configuration hadoopConf) throws IOException {
        super(path, hadoopConf);
        this.fs = path.getFileSystem(hadoopConf);
    }

    @Override
    public CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
        if (!ObjectRequests.isS3A(fs)) {
            return super.createAtomic(path, overwriteIfPossible);
        }
        return new WholeObject(new ByteArrayOutputStream(), fs, path, overwriteIfPossible);
    }

    /** The object's content, uploaded as one object when the stream closes. */
    private static final class WholeObject extends CancellableFSDataOutputStream {

        private final ByteArrayOutputStream content;
        private final FileSystem fs;
        private final Path path;
        private final boolean overwrite;
        private boolean finished;

        WholeObject(ByteArrayOutputStream content, FileSystem fs, Path path, boolean overwrite) {
            super(content);
            this.content = content;
            this.fs = fs;
            this.path = path;
            this.overwrite = overwrite;
        }

        @Override
        public void cancel() {
            finished = true;
        }

        @Override
        public void close() throws IOException {
            if (finished) {
                return;
            }
            finished = true;
            super.close();
            if (!overwrite && ObjectRequests.exists(fs, path)) {
                throw new FileAlreadyExistsException(path + " exists");
            }
            ObjectRequests.put(fs, path, content.toByteArray());
        }
    }
}
