package knowledge.opensearch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.transport.TransportAddress;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;
import org.opensearch.transport.TransportService;

/**
 * One OpenSearch node in this JVM, with the modules and the k-NN plugin loaded from the classpath
 * (as OpenSearch's own integration tests load them) instead of from a distribution's folders.
 *
 * <p>Arguments are node settings, {@code key=value} each ({@code path.home} is required). Once the
 * node has started, it writes {@code <path.home>/ready.json} with the HTTP and transport addresses
 * it bound (ports 0 pick free ones). It stops on SIGTERM or SIGINT, and when its standard input
 * reaches end of file: then its parent is gone, so it also removes {@code path.home}, which the
 * parent would have removed, and leaves nothing behind.
 */
public final class LocalNode extends Node {

    /** The k-NN plugin, published only as a distribution zip whose jars are on the runtime classpath. */
    static final String KNN_PLUGIN = "org.opensearch.knn.plugin.KNNPlugin";

    private LocalNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, plugins, true);
    }

    public static void main(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder();
        for (String arg : args) {
            int equals = arg.indexOf('=');
            if (equals <= 0) {
                throw new IllegalArgumentException("expected key=value, got " + arg);
            }
            builder.put(arg.substring(0, equals), arg.substring(equals + 1));
        }
        Settings settings = builder.build();
        Path home = Path.of(Environment.PATH_HOME_SETTING.get(settings));
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, java.util.Map.of(), home.resolve("config"), () -> "local"
        );
        LocalNode node = new LocalNode(environment, plugins());
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean orphaned = new AtomicBoolean(false);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            close(node, stopped);
            if (orphaned.get()) {
                removeTree(home);
            }
        }, "local-node-stop"));
        node.start();
        writeReady(home, node);
        watchStandardInput(orphaned);
        stopped.await();
    }

    /** The modules a distribution of OpenSearch 2.19 ships that our mappings and requests use, and k-NN. */
    static List<Class<? extends Plugin>> plugins() throws ClassNotFoundException {
        return List.of(
            Netty4Plugin.class,
            CommonAnalysisPlugin.class,
            PainlessPlugin.class,
            ReindexPlugin.class,
            Class.forName(KNN_PLUGIN).asSubclass(Plugin.class)
        );
    }

    private static void writeReady(Path home, Node node) throws IOException {
        TransportAddress http = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
        TransportAddress transport = node.injector().getInstance(TransportService.class).boundAddress().publishAddress();
        String json = String.format(
            "{\"http\": \"%s\", \"transport\": \"%s\", \"pid\": %d}%n",
            http, transport, ProcessHandle.current().pid()
        );
        Path partial = home.resolve("ready.json.partial");
        Files.writeString(partial, json, StandardCharsets.UTF_8);
        Files.move(partial, home.resolve("ready.json"), StandardCopyOption.ATOMIC_MOVE);
    }

    private static void watchStandardInput(AtomicBoolean orphaned) {
        Thread watcher = new Thread(() -> {
            try (InputStream in = System.in) {
                while (in.read() != -1) {
                    // Anything written is ignored; only the end of the stream means something.
                }
            } catch (IOException ignored) {
                // A broken stream is an ended one.
            }
            orphaned.set(true);
            System.exit(0);
        }, "local-node-stdin");
        watcher.setDaemon(true);
        watcher.start();
    }

    private static void removeTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException error) {
            System.err.println("removing " + root + " failed: " + error);
        }
    }

    private static void close(Node node, CountDownLatch stopped) {
        try {
            node.close();
            node.awaitClose(20, TimeUnit.SECONDS);
        } catch (IOException | InterruptedException error) {
            System.err.println("stopping the node failed: " + error);
        } finally {
            stopped.countDown();
        }
    }
}
