package io.pgdurable.internal.longpoll;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A TCP proxy on 127.0.0.1 (ephemeral port) in front of a loopback PostgreSQL, for failure tests:
 * <ul>
 *   <li>{@link #forward()}: pass bytes both ways (the default);</li>
 *   <li>{@link #wedge()}: stop forwarding without closing anything — a half-open link. Connections accepted while
 *       wedged are a black hole (the startup packet is swallowed);</li>
 *   <li>{@link #drop()}: close every connection and close new ones as soon as they are accepted.</li>
 * </ul>
 */
final class LoopbackProxy implements AutoCloseable {
    enum Mode { FORWARD, WEDGE, DROP }

    private final InetSocketAddress target;
    private final ServerSocket server;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition modeChanged = lock.newCondition();
    private final AtomicInteger accepted = new AtomicInteger();
    private volatile Mode mode = Mode.FORWARD;
    private final AtomicInteger toSwallow = new AtomicInteger();
    private volatile boolean closed;

    LoopbackProxy(String targetHost, int targetPort) throws IOException {
        InetAddress address = InetAddress.getByName(targetHost);
        if (!address.isLoopbackAddress()) {
            throw new IllegalArgumentException("the proxy only fronts loopback servers");
        }
        this.target = new InetSocketAddress(address, targetPort);
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, "loopback-proxy-accept-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** A proxy in front of the host and port of a pgjdbc URL ({@code jdbc:postgresql://host:port/...}). */
    static LoopbackProxy inFrontOf(String jdbcUrl) throws IOException {
        String[] hp = hostAndPort(jdbcUrl);
        return new LoopbackProxy(hp[0], Integer.parseInt(hp[1]));
    }

    /** Whether the URL's server is on a loopback address (the proxy tests need that). */
    static boolean isLoopback(String jdbcUrl) {
        try {
            return InetAddress.getByName(hostAndPort(jdbcUrl)[0]).isLoopbackAddress();
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static String[] hostAndPort(String jdbcUrl) {
        String prefix = "jdbc:postgresql://";
        if (!jdbcUrl.startsWith(prefix)) {
            throw new IllegalArgumentException("expected " + prefix + "host:port/...");
        }
        String rest = jdbcUrl.substring(prefix.length());
        int slash = rest.indexOf('/');
        String hostPort = slash < 0 ? rest : rest.substring(0, slash);
        int colon = hostPort.lastIndexOf(':');
        if (colon < 0 || hostPort.endsWith("]")) {
            return new String[] {hostPort, "5432"};
        }
        return new String[] {hostPort.substring(0, colon), hostPort.substring(colon + 1)};
    }

    /** The same URL, pointed at this proxy. */
    String rewrite(String jdbcUrl) {
        String prefix = "jdbc:postgresql://";
        String rest = jdbcUrl.substring(prefix.length());
        int slash = rest.indexOf('/');
        return prefix + "127.0.0.1:" + port() + (slash < 0 ? "/" : rest.substring(slash));
    }

    int port() {
        return server.getLocalPort();
    }

    /** Connections accepted so far. */
    int accepted() {
        return accepted.get();
    }

    /** Waits (bounded) until at least {@code n} connections were accepted. */
    boolean awaitAccepted(int n, long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        lock.lock();
        try {
            while (accepted.get() < n) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                modeChanged.awaitNanos(left);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    void forward() {
        setMode(Mode.FORWARD);
    }

    void wedge() {
        setMode(Mode.WEDGE);
    }

    /**
     * The next {@code n} connections are accepted and then never answered, whatever the mode later becomes (a
     * connect that neither fails nor finishes), while later ones are handled by the mode.
     */
    void swallowNext(int n) {
        toSwallow.set(n);
    }

    void drop() {
        setMode(Mode.DROP);
        closeAll();
    }

    private void setMode(Mode m) {
        lock.lock();
        try {
            mode = m;
            modeChanged.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void signalAll() {
        lock.lock();
        try {
            modeChanged.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            accepted.incrementAndGet();
            signalAll(); // wakes awaitAccepted
            if (mode == Mode.DROP || closed) {
                quietClose(client);
                continue;
            }
            if (toSwallow.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                sockets.add(client); // closed with the proxy, never read
                continue;
            }
            Socket upstream = new Socket();
            try {
                upstream.connect(target, 2_000);
            } catch (IOException e) {
                quietClose(client);
                quietClose(upstream);
                continue;
            }
            sockets.add(client);
            sockets.add(upstream);
            startPump(client, upstream, "up");
            startPump(upstream, client, "down");
        }
    }

    private void startPump(Socket from, Socket to, String direction) {
        Thread t = new Thread(() -> pump(from, to), "loopback-proxy-" + direction + "-" + port());
        t.setDaemon(true);
        t.start();
    }

    private void pump(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                if (!awaitForwarding()) {
                    break;
                }
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // one side closed: close both below
        } finally {
            quietClose(from);
            quietClose(to);
            sockets.remove(from);
            sockets.remove(to);
        }
    }

    /** Holds a pump while wedged; false when the proxy drops or closes. */
    private boolean awaitForwarding() {
        lock.lock();
        try {
            while (mode == Mode.WEDGE && !closed) {
                try {
                    modeChanged.await(100, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return mode == Mode.FORWARD && !closed;
        } finally {
            lock.unlock();
        }
    }

    private void closeAll() {
        for (Socket s : sockets) {
            quietClose(s);
        }
        sockets.clear();
    }

    private static void quietClose(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        setMode(Mode.DROP);
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        closeAll();
    }
}
