package io.pgdurable.durabletask;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;

/**
 * Turns the bytes of each request into its message inside the call, so that a request that is not one answers
 * INVALID_ARGUMENT naming what is wrong. gRPC itself parses in the transport, where a marshaller's exception becomes
 * UNKNOWN ("Application error processing RPC") with a stack trace in the server's log. Requests from SDKs of Dapr's
 * fork are read through {@link ForkTolerance}; a unary call must carry exactly one request message.
 */
final class RequestDecoding {
    /** A request or response as its bytes, as they travel. */
    static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream in) {
            try {
                return in.readAllBytes();
            } catch (IOException e) {
                // The message is in memory already (gRPC buffers it whole, within the inbound size limit).
                throw new java.io.UncheckedIOException(e);
            }
        }
    };

    private RequestDecoding() {}

    /** The service with every method taking the request's bytes and decoding them itself. */
    static ServerServiceDefinition apply(ServerServiceDefinition service) {
        ServerServiceDefinition.Builder out = ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> m : service.getMethods()) {
            out.addMethod(decoding(m));
        }
        return out.build();
    }

    @SuppressWarnings("unchecked")
    private static <Q, R> ServerMethodDefinition<byte[], R> decoding(ServerMethodDefinition<Q, R> m) {
        MethodDescriptor<Q, R> typed = m.getMethodDescriptor();
        if (!(typed.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<Q> p)
                || !(p.getMessagePrototype() instanceof Message prototype)) {
            throw new IllegalArgumentException(typed.getFullMethodName() + " does not take a protobuf message");
        }
        Decoder<Q> decoder = new Decoder<>((Parser<Q>) prototype.getParserForType(),
                prototype.getDescriptorForType(), typed.getBareMethodName());
        MethodDescriptor<byte[], R> raw = typed.toBuilder(BYTES, typed.getResponseMarshaller()).build();
        return ServerMethodDefinition.create(raw, new DecodingHandler<>(typed, m.getServerCallHandler(), decoder));
    }

    /** One method's request parsing. */
    record Decoder<Q>(Parser<Q> parser, Descriptor type, String method) {
        Q decode(byte[] bytes) throws StatusException {
            try {
                return parser.parseFrom(bytes);
            } catch (InvalidProtocolBufferException first) {
                // Checked before the fork's repair, which would drop the message holding the bad text and let the
                // request in without it.
                Optional<String> notUtf8 = Utf8Fields.firstInvalid(bytes, type);
                if (notUtf8.isPresent()) {
                    throw Status.INVALID_ARGUMENT.withDescription(method + ": field " + notUtf8.get()
                            + " is not valid UTF-8 (protobuf strings must be)").asException();
                }
                try {
                    return ForkTolerance.withoutForeignFields(parser, type, bytes, method);
                } catch (IOException | RuntimeException e) {
                    throw Status.INVALID_ARGUMENT.withDescription(method + ": the request is not a valid "
                            + type.getName() + " message (" + first.getMessage() + ")").asException();
                }
            }
        }
    }

    /** Starts the method's own handler on a call of its request type and feeds it the decoded requests. */
    private static final class DecodingHandler<Q, R> implements ServerCallHandler<byte[], R> {
        private final MethodDescriptor<Q, R> typed;
        private final ServerCallHandler<Q, R> next;
        private final Decoder<Q> decoder;

        DecodingHandler(MethodDescriptor<Q, R> typed, ServerCallHandler<Q, R> next, Decoder<Q> decoder) {
            this.typed = typed;
            this.next = next;
            this.decoder = decoder;
        }

        @Override
        public ServerCall.Listener<byte[]> startCall(ServerCall<byte[], R> call, Metadata headers) {
            ServerCall.Listener<Q> inner = next.startCall(new TypedCall<>(call, typed), headers);
            return new DecodingListener<>(call, inner, decoder, typed.getType().clientSendsOneMessage());
        }
    }

    /**
     * Hands decoded requests on; a request that does not decode, or a second request (or none) on a call that takes
     * one, ends the call with INVALID_ARGUMENT before the method runs.
     */
    private static final class DecodingListener<Q> extends ServerCall.Listener<byte[]> {
        private final ServerCall<byte[], ?> call;
        private final ServerCall.Listener<Q> inner;
        private final Decoder<Q> decoder;
        private final boolean oneRequest;
        private int received;
        private boolean refused;

        DecodingListener(ServerCall<byte[], ?> call, ServerCall.Listener<Q> inner, Decoder<Q> decoder,
                         boolean oneRequest) {
            this.call = call;
            this.inner = inner;
            this.decoder = decoder;
            this.oneRequest = oneRequest;
        }

        @Override
        public void onMessage(byte[] bytes) {
            if (refused) {
                return;
            }
            if (oneRequest && ++received > 1) {
                refuse(Status.INVALID_ARGUMENT.withDescription(decoder.method() + " takes one request message; "
                        + "the call sent more"));
                return;
            }
            Q request;
            try {
                request = decoder.decode(bytes);
            } catch (StatusException e) {
                refuse(e.getStatus());
                return;
            }
            inner.onMessage(request);
        }

        @Override
        public void onHalfClose() {
            if (refused) {
                return;
            }
            if (oneRequest && received == 0) {
                refuse(Status.INVALID_ARGUMENT.withDescription(decoder.method() + " takes one request message; "
                        + "the call sent none"));
                return;
            }
            inner.onHalfClose();
        }

        @Override
        public void onCancel() {
            inner.onCancel();
        }

        @Override
        public void onComplete() {
            inner.onComplete();
        }

        @Override
        public void onReady() {
            if (!refused) {
                inner.onReady();
            }
        }

        private void refuse(Status status) {
            refused = true;
            call.close(status, new Metadata());
        }
    }

    /** The call as the method's own handler sees it: of its request type, everything else passed through. */
    private static final class TypedCall<Q, R> extends ServerCall<Q, R> {
        private final ServerCall<byte[], R> call;
        private final MethodDescriptor<Q, R> typed;

        TypedCall(ServerCall<byte[], R> call, MethodDescriptor<Q, R> typed) {
            this.call = call;
            this.typed = typed;
        }

        @Override
        public void request(int numMessages) {
            call.request(numMessages);
        }

        @Override
        public void sendHeaders(Metadata headers) {
            call.sendHeaders(headers);
        }

        @Override
        public void sendMessage(R message) {
            call.sendMessage(message);
        }

        @Override
        public boolean isReady() {
            return call.isReady();
        }

        @Override
        public void close(Status status, Metadata trailers) {
            call.close(status, trailers);
        }

        @Override
        public boolean isCancelled() {
            return call.isCancelled();
        }

        @Override
        public void setMessageCompression(boolean enabled) {
            call.setMessageCompression(enabled);
        }

        @Override
        public void setCompression(String compressor) {
            call.setCompression(compressor);
        }

        @Override
        public SecurityLevel getSecurityLevel() {
            return call.getSecurityLevel();
        }

        @Override
        public Attributes getAttributes() {
            return call.getAttributes();
        }

        @Override
        public String getAuthority() {
            return call.getAuthority();
        }

        @Override
        public MethodDescriptor<Q, R> getMethodDescriptor() {
            return typed;
        }
    }
}
