package zync.delta;

import io.delta.storage.HDFSLogStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
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
 * pays for thousands of file statuses at every read after a day: 41 ms for 1,000 files and 535 ms
 * for 16,000 on a 2-core machine (bench/log_listing.py), growing for the 30 days. This store reads
 * the folder's names (one directory read), keeps those from the version on, and asks only for their
 * sizes and times. The files it returns, and their order, are Delta's.
 *
 * <p>Writes: HDFSLogStore writes a commit to a temporary file and renames it through Hadoop's
 * FileContext, which on a local folder checks the target's status by running a `readlink`
 * process (RawLocalFileSystem's file link status) for each file: a process started from the
 * engine's JVM at every commit of every table, a sixth of the driver's busy time when zync run
 * created 200 raw tables. And that check and the rename are two steps, so two writers of the same
 * version could both pass the check and the second rename replace the first's commit. This store
 * writes the temporary file with java.nio and publishes it with a hard link, which the kernel
 * refuses if the version exists: put-if-absent in one step, no process. An overwrite (asked only
 * for files Delta may replace, as _last_checkpoint) is one atomic rename. A folder that cannot
 * hold hard links gets HDFSLogStore's write.
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
        java.nio.file.Path folder = ((LocalFileSystem) fs).pathToFile(parent).toPath();
        String from = path.getName();
        List<String> names = new ArrayList<>();
        // A folder that is not there is Delta's "no table here"; any other failure to read it must
        // not read as that (Delta would take the table for empty), so it is raised as it is.
        try (DirectoryStream<java.nio.file.Path> entries = Files.newDirectoryStream(folder)) {
            for (java.nio.file.Path entry : entries) {
                String name = entry.getFileName().toString();
                if (name.compareTo(from) >= 0) {
                    names.add(name);
                }
            }
        } catch (NoSuchFileException | NotDirectoryException e) {
            throw new FileNotFoundException(String.format("No such file or directory: %s", parent));
        }
        Collections.sort(names);
        long blockSize = fs.getDefaultBlockSize(parent);
        List<FileStatus> listed = new ArrayList<>(names.size());
        for (String name : names) {
            BasicFileAttributes attributes;
            try {
                attributes = Files.readAttributes(folder.resolve(name), BasicFileAttributes.class);
            } catch (NoSuchFileException e) {
                continue; // removed since the folder was read (the log's cleanup), as Hadoop's listing skips it
            }
            listed.add(new FileStatus(attributes.size(), attributes.isDirectory(), 1, blockSize,
                                      attributes.lastModifiedTime().toMillis(), new Path(parent, name)));
        }
        return listed.iterator();
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        if (!(fs instanceof LocalFileSystem)) {
            super.write(path, actions, overwrite, hadoopConf);
            return;
        }
        java.nio.file.Path target = ((LocalFileSystem) fs).pathToFile(fs.makeQualified(path)).toPath();
        if (!overwrite && Files.exists(target)) {
            throw new FileAlreadyExistsException(path.toString());
        }
        List<String> lines = new ArrayList<>();
        actions.forEachRemaining(lines::add);
        // Dot-named, as Hadoop's hidden files: Delta's listings and VACUUM pass over it.
        java.nio.file.Path temp = target.resolveSibling("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
        try {
            try (Writer writer = Files.newBufferedWriter(temp, StandardCharsets.UTF_8, StandardOpenOption.CREATE_NEW)) {
                for (String line : lines) {
                    writer.write(line);
                    writer.write('\n');
                }
            }
            if (overwrite) {
                try {
                    Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
                }
                return;
            }
            try {
                Files.createLink(target, temp);
            } catch (FileAlreadyExistsException e) {
                throw new FileAlreadyExistsException(path.toString());
            } catch (UnsupportedOperationException | java.nio.file.FileSystemException e) {
                // A folder without hard links (some network and FUSE file systems): Delta's own write.
                if (Files.exists(target)) {
                    throw new FileAlreadyExistsException(path.toString());
                }
                super.write(path, lines.iterator(), false, hadoopConf);
            }
        } finally {
            Files.deleteIfExists(temp);
        }
    }
}
