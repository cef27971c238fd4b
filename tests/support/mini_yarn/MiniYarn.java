// A one-node YARN cluster for the tests (Hadoop's MiniYARNCluster, as Spark's own YARN suite runs it):
// starts it, writes its yarn-site.xml and a "ready" file into the directory given, and runs until killed.
import java.io.File;
import java.io.FileOutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public class MiniYarn {
  public static void main(String[] args) throws Exception {
    File confDir = new File(args[0]);
    confDir.mkdirs();
    YarnConfiguration conf = new YarnConfiguration();
    conf.set("yarn.nodemanager.vmem-check-enabled", "false");
    conf.set("yarn.nodemanager.pmem-check-enabled", "false");
    conf.setInt("yarn.nodemanager.resource.memory-mb", 6144);
    conf.setInt("yarn.nodemanager.resource.cpu-vcores", 4);
    conf.setInt("yarn.scheduler.minimum-allocation-mb", 128);
    conf.set("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "100.0");
    conf.set("yarn.resourcemanager.hostname", "127.0.0.1");
    conf.set("yarn.nodemanager.hostname", "127.0.0.1");
    conf.set("fs.defaultFS", "file:///");
    MiniYARNCluster cluster = new MiniYARNCluster("deltacc", 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    Configuration live = cluster.getConfig();
    long deadline = System.currentTimeMillis() + 60000;
    while (live.get(YarnConfiguration.RM_ADDRESS).split(":")[1].equals("0")) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("RM did not start");
      Thread.sleep(100);
    }
    try (FileOutputStream out = new FileOutputStream(new File(confDir, "yarn-site.xml"))) {
      live.writeXml(out);
    }
    new File(confDir, "ready").createNewFile();
    System.out.println("READY " + live.get(YarnConfiguration.RM_ADDRESS));
    Thread.currentThread().join();
  }
}
