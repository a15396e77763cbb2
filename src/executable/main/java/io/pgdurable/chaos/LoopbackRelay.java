package io.pgdurable.chaos;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A TCP relay listening on the loopback interface only, forwarding each accepted connection to one PostgreSQL
 * server. {@link #pause()} stops moving bytes (and end-of-stream) in both directions without closing anything, so
 * both ends keep a socket that looks healthy but carries nothing: a half-open link. {@link #resume()} lets the held
 * bytes through again.
 *
 * <p>It also knows the local port of each of its connections to the server, which is the {@code client_port} the
 * server shows in {@code pg_stat_activity}: that is how the chaos run finds its own backends and no one else's.
 */
public final class LoopbackRelay implements AutoCloseable {
    private static final int CONNECT_TIMEOUT_MILLIS = 5_000;

    private final InetSocketAddress target;
    private final ServerSocket server;
    private final String name;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final Set<Integer> upstreamPorts = ConcurrentHashMap.newKeySet();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition resumed = lock.newCondition();
    private volatile boolean paused;
    private volatile boolean closed;

    /** Starts relaying from an ephemeral loopback port to {@code host:port}. */
    public LoopbackRelay(String name, String host, int port) throws IOException {
        this.name = name;
        this.target = new InetSocketAddress(host, port);
        if (target.isUnresolved()) {
            throw new IOException("cannot resolve the database host " + host);
        }
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, "pgdurable-chaos-relay-" + name);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** The loopback port clients connect to. */
    public int port() {
        return server.getLocalPort();
    }

    /** The local ports of the relay's open connections to the server (their backends' {@code client_port}). */
    public List<Integer> upstreamPorts() {
        return List.copyOf(upstreamPorts);
    }

    public boolean paused() {
        return paused;
    }

    /** Holds every byte from now on, in both directions, on open and new connections alike. */
    public void pause() {
        paused = true;
    }

    public void resume() {
        lock.lock();
        try {
            paused = false;
            resumed.signalAll();
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
            Socket upstream = new Socket();
            try {
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                upstream.connect(target, CONNECT_TIMEOUT_MILLIS);
            } catch (IOException e) {
                // the client sees its connection closed, as it would with the server gone
                quietClose(client);
                quietClose(upstream);
                continue;
            }
            int upstreamPort = upstream.getLocalPort();
            sockets.add(client);
            sockets.add(upstream);
            upstreamPorts.add(upstreamPort);
            if (closed) {
                closePair(client, upstream, upstreamPort);
                return;
            }
            startPump(client, upstream, upstreamPort, "up");
            startPump(upstream, client, upstreamPort, "down");
        }
    }

    private void startPump(Socket from, Socket to, int upstreamPort, String direction) {
        Thread t = new Thread(() -> pump(from, to, upstreamPort),
                "pgdurable-chaos-relay-" + name + "-" + upstreamPort + "-" + direction);
        t.setDaemon(true);
        t.start();
    }

    private void pump(Socket from, Socket to, int upstreamPort) {
        byte[] buffer = new byte[16 * 1024];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int n;
            do {
                n = in.read(buffer);
                // held here while paused: data and end-of-stream alike, or the pause would not be half-open
                if (!awaitForwarding()) {
                    break;
                }
                if (n > 0) {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } while (n >= 0);
        } catch (IOException e) {
            // one side is gone: both are closed below
        } finally {
            closePair(from, to, upstreamPort);
        }
    }

    /** Waits while paused (in bounded slices, so close() is noticed); false once the relay is closed. */
    private boolean awaitForwarding() {
        lock.lock();
        try {
            while (paused && !closed) {
                try {
                    resumed.await(100, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return !closed;
        } finally {
            lock.unlock();
        }
    }

    private void closePair(Socket a, Socket b, int upstreamPort) {
        quietClose(a);
        quietClose(b);
        sockets.remove(a);
        sockets.remove(b);
        upstreamPorts.remove(upstreamPort);
    }

    private static void quietClose(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Stops accepting and closes every connection; paused pumps notice within 100 ms. */
    @Override
    public void close() {
        closed = true;
        resume();
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Socket s : sockets) {
            quietClose(s);
        }
        sockets.clear();
        upstreamPorts.clear();
    }
}
