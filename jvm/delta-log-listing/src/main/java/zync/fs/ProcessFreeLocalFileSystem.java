package zync.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's file system for file: paths (LocalFileSystem, with its .crc checksums), setting a
 * file's permissions with Java's file API instead of a `chmod` process.
 *
 * <p>Without Hadoop's native library (not published to Maven Central, so not on pyspark's class
 * path), RawLocalFileSystem sets the permissions of every file it creates with permissions, and
 * of every folder it makes, by starting `chmod` from the JVM: Delta's checksum file of each commit
 * (twice, with its .crc), a new table's folders. Starting a process from the engine's JVM costs
 * milliseconds on a small machine, at every commit of every table. POSIX permissions are set
 * here as Hadoop's `chmod` would set them; a sticky bit, or a file system without POSIX
 * permissions, gets Hadoop's own way.
 */
public class ProcessFreeLocalFileSystem extends LocalFileSystem {

    public ProcessFreeLocalFileSystem() {
        super(new Raw());
    }

    /** The raw file system under the checksums, where permissions are set. */
    public static class Raw extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            short mode = permission.toShort();
            if ((mode & ~0777) != 0) {
                super.setPermission(p, permission);
                return;
            }
            Set<PosixFilePermission> posix = PosixFilePermissions.fromString(
                permission.getUserAction().SYMBOL + permission.getGroupAction().SYMBOL
                + permission.getOtherAction().SYMBOL);
            try {
                Files.setPosixFilePermissions(pathToFile(p).toPath(), posix);
            } catch (UnsupportedOperationException e) {
                super.setPermission(p, permission);
            }
        }
    }
}
