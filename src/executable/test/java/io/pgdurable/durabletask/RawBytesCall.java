package io.pgdurable.durabletask;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A call of a sidecar method with request bytes made by hand (what no generated stub would send: invalid UTF-8,
 * truncated or repeated fields, several request messages), and the protobuf field encoding to make them with.
 */
final class RawBytesCall {
    static final String SERVICE = "TaskHubSidecarService";

    static final MethodDescriptor.Marshaller<byte[]> BYTES = RequestDecoding.BYTES;

    /** How a call ended and what it received. */
    record Outcome(Status status, List<byte[]> messages) {
        Status.Code code() {
            return status.getCode();
        }

        String description() {
            return status.getDescription() == null ? "" : status.getDescription();
        }

        @Override
        public String toString() {
            return code() + " '" + description() + "' after " + messages.size() + " message(s)";
        }
    }

    private RawBytesCall() {}

    static MethodDescriptor<byte[], byte[]> method(String name) {
        return MethodDescriptor.<byte[], byte[]>newBuilder().setType(MethodDescriptor.MethodType.BIDI_STREAMING)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
                .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();
    }

    /** Sends {@code requests} (usually one), half-closes, and waits for the end of the call. */
    static Outcome call(Channel channel, String method, Duration deadline, byte[]... requests) {
        ClientCall<byte[], byte[]> call = channel.newCall(method(method),
                CallOptions.DEFAULT.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS));
        CompletableFuture<Status> closed = new CompletableFuture<>();
        List<byte[]> received = Collections.synchronizedList(new ArrayList<>());
        call.start(new ClientCall.Listener<>() {
            @Override
            public void onMessage(byte[] message) {
                received.add(message);
                call.request(1);
            }

            @Override
            public void onClose(Status status, Metadata trailers) {
                closed.complete(status);
            }
        }, new Metadata());
        call.request(1);
        for (byte[] r : requests) {
            call.sendMessage(r);
        }
        call.halfClose();
        try {
            return new Outcome(closed.get(deadline.toMillis() + 10_000, TimeUnit.MILLISECONDS),
                    List.copyOf(received));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.cancel("interrupted", e);
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            call.cancel("the test gave up", e);
            throw new AssertionError(method + " did not end within its deadline", e);
        }
    }

    // ------------------------------------------------------------------ encoding

    /** A length-delimited field (string, bytes or message) with the given raw bytes. */
    static byte[] field(int number, byte[] value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        varint(out, ((long) number << 3) | 2);
        varint(out, value.length);
        out.writeBytes(value);
        return out.toByteArray();
    }

    static byte[] field(int number, String utf8) {
        return field(number, utf8.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** A varint field (int32, int64, bool, enum). */
    static byte[] varintField(int number, long value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        varint(out, (long) number << 3);
        varint(out, value);
        return out.toByteArray();
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    /** Bytes that are not UTF-8: a lead byte followed by one that cannot continue it. */
    static final byte[] NOT_UTF8 = {(byte) 'a', (byte) 0xC3, (byte) 0x28, (byte) 'z'};

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }
}
