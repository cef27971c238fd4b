/*
 * A Delta log store for S3 that keeps the commits of many drivers: a new commit file is created
 * put-if-absent (S3 conditional writes, "If-None-Match: *", through Hadoop 3.5 S3A's createFile() option
 * fs.option.create.conditional.overwrite). Of two drivers racing for version v exactly one creates
 * _delta_log/v.json; the other gets java.nio.file.FileAlreadyExistsException, and Delta checks for
 * conflicts and tries the next version. Checkpoints and _last_checkpoint (overwrite=true) keep plain
 * overwrites.
 *
 * Built from this source by airflow_provider_deltacc.spark_jars.put_if_absent; no binary is shipped.
 */
package io.deltacc.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class S3PutIfAbsentLogStore extends HadoopFileSystemLogStore {

    /** Hadoop's Options.CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE (Hadoop 3.5). */
    public static final String CONDITIONAL_OVERWRITE = "fs.option.create.conditional.overwrite";

    private static final Logger LOG = LoggerFactory.getLogger(S3PutIfAbsentLogStore.class);

    public S3PutIfAbsentLogStore(Configuration initHadoopConf) {
        super(initHadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        if (overwrite) {
            try (FSDataOutputStream stream = fs.create(path, true)) {
                writeLines(stream, actions);
            }
            return;
        }
        List<String> lines = new ArrayList<>();
        actions.forEachRemaining(lines::add);
        try {
            createIfAbsent(fs, path, lines);
        } catch (IOException e) {
            if (!unsupported(e)) {
                throw alreadyExists(path, e);
            }
            // The store refuses conditional writes (HTTP 501): create as Delta's single-driver S3 log store
            // does. The provider's probe finds the same answer and serializes the writers of this table.
            LOG.warn("{}: the S3 store does not do conditional writes ({}); creating {} without a precondition",
                    S3PutIfAbsentLogStore.class.getSimpleName(), e.toString(), path);
            if (fs.exists(path)) {
                throw new FileAlreadyExistsException(path.toString());
            }
            try (FSDataOutputStream stream = fs.create(path, false)) {
                writeLines(stream, lines.iterator());
            }
        }
    }

    private static void createIfAbsent(FileSystem fs, Path path, List<String> lines) throws IOException {
        // must(): a file system that cannot create put-if-absent refuses instead of overwriting.
        FSDataOutputStream stream = (FSDataOutputStream) fs.createFile(path)
                .overwrite(false)
                .must(CONDITIONAL_OVERWRITE, true)
                .build();
        try {
            writeLines(stream, lines.iterator());
        } catch (IOException e) {
            closeQuietly(stream);
            throw e;
        }
        stream.close(); // the upload, and its precondition, happen here
    }

    /** Whether the store refused the conditional create as a feature it does not have (HTTP 501). */
    static boolean unsupported(Throwable error) {
        for (Throwable t = error; t != null && t.getCause() != t; t = t.getCause()) {
            if (t.getClass().getName().equals("org.apache.hadoop.fs.s3a.AWSUnsupportedFeatureException")
                    || String.valueOf(t.getMessage()).contains("NotImplemented")) {
                return true;
            }
        }
        return false;
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false; // an S3 PUT lands whole or not at all
    }

    private static void writeLines(FSDataOutputStream stream, Iterator<String> actions) throws IOException {
        while (actions.hasNext()) {
            stream.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void closeQuietly(FSDataOutputStream stream) {
        try {
            stream.close();
        } catch (IOException ignored) {
            // the write already failed; its own error is the one reported
        }
    }

    /** The error itself, or FileAlreadyExistsException when it says the file was there first. */
    static IOException alreadyExists(Path path, IOException error) {
        if (!lostTheRace(error)) {
            return error;
        }
        LOG.info("{} was created by another writer first ({}); Delta tries the next version", path, error.toString());
        return withCause(new FileAlreadyExistsException(path.toString()), error);
    }

    /** S3A reports a failed precondition (HTTP 412) as RemoteFileChangedException, and an existing file
     *  found before the upload as Hadoop's FileAlreadyExistsException; matched by name, so this class loads
     *  without hadoop-aws. */
    static boolean lostTheRace(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            String name = t.getClass().getName();
            String message = String.valueOf(t.getMessage());
            if (t instanceof FileAlreadyExistsException
                    || name.equals("org.apache.hadoop.fs.FileAlreadyExistsException")
                    || name.equals("org.apache.hadoop.fs.s3a.RemoteFileChangedException")
                    || message.contains("PreconditionFailed")) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    private static IOException withCause(FileAlreadyExistsException exists, IOException cause) {
        exists.initCause(cause);
        return exists;
    }
}
