package zync.delta;

import io.delta.storage.HDFSLogStore;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Delta's log store for local folders (HDFSLogStore, the default for file: paths), listing a
 * table's log by name first.
 *
 * <p>Every read of a Delta table and every commit asks the log store for the log files from a
 * version on (listFrom). Delta's implementation asks Hadoop for the status of every file in
 * _delta_log and then keeps the names from that version on. A table keeps its log files for
 * delta.logRetentionDuration (30 days), four per commit on a local folder (the commit, its
 * checksum, and Hadoop's .crc of each), so a table that zync run commits to every few seconds
 * pays for thousands of file statuses at every read after a day: 27 ms for 1,000 files and 220 ms
 * for 10,000 on a 2-core machine, growing for the 30 days. This store reads the folder's names
 * (one directory read), keeps those from the version on, and asks only for their sizes and times.
 * The files it returns, and their order, are Delta's; writes are HDFSLogStore's own.
 */
public class NameFirstLogStore extends HDFSLogStore {

    public NameFirstLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        if (!(fs instanceof LocalFileSystem)) {
            return super.listFrom(path, hadoopConf);
        }
        Path parent = fs.makeQualified(path.getParent());
        File folder = ((LocalFileSystem) fs).pathToFile(parent);
        String[] names = folder.list();
        if (names == null) {
            throw new FileNotFoundException(String.format("No such file or directory: %s", parent));
        }
        String from = path.getName();
        Arrays.sort(names);
        long blockSize = fs.getDefaultBlockSize(parent);
        List<FileStatus> listed = new ArrayList<>();
        for (String name : names) {
            if (name.compareTo(from) < 0) {
                continue;
            }
            File file = new File(folder, name);
            long modified = file.lastModified();
            if (modified == 0L && !file.exists()) {
                continue; // removed since the folder was read (the log's cleanup): as if listed before
            }
            listed.add(new FileStatus(file.length(), file.isDirectory(), 1, blockSize, modified,
                                      new Path(parent, name)));
        }
        return listed.iterator();
    }
}
