package io.pgdurable.durabletask;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import com.google.protobuf.WireFormat;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads requests from SDKs built on Dapr's fork of the protocol. That fork gives a few field numbers other types than
 * the sidecar's definition does (e.g. field 9 of {@code OrchestratorAction}: an app-id router there, a
 * {@code RewindOrchestrationAction} here). A fork value whose bytes are not the message declared under its number
 * fails the request as a whole. So when a request does not parse, the fields whose bytes are not the message this
 * protocol declares are dropped (they carry nothing this sidecar uses), and it is parsed again. A request that parses
 * is untouched: the cost is paid only by the fork's requests. Fork fields under numbers the definition leaves out
 * (such as the task execution id Dapr's Java worker puts in {@code ScheduleTaskAction} field 5) never fail: protobuf
 * keeps them as unknown fields.
 */
final class ForkTolerance {
    private static final Logger LOG = LoggerFactory.getLogger(ForkTolerance.class);
    private static final AtomicBoolean LOGGED = new AtomicBoolean();
    private static final int MAX_DEPTH = 32;

    private ForkTolerance() {}

    /** The service with every method's request marshaller made tolerant. */
    static ServerServiceDefinition apply(ServerServiceDefinition service) {
        ServerServiceDefinition.Builder out = ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> m : service.getMethods()) {
            out.addMethod(tolerant(m));
        }
        return out.build();
    }

    @SuppressWarnings("unchecked")
    private static <Q, R> ServerMethodDefinition<Q, R> tolerant(ServerMethodDefinition<Q, R> m) {
        MethodDescriptor<Q, R> d = m.getMethodDescriptor();
        if (!(d.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<Q> p)
                || !(p.getMessagePrototype() instanceof Message prototype)) {
            return m;
        }
        Parser<Message> parser = (Parser<Message>) prototype.getParserForType();
        Descriptor type = prototype.getDescriptorForType();
        MethodDescriptor.Marshaller<Q> marshaller = new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(Q value) {
                return d.getRequestMarshaller().stream(value);
            }

            @Override
            public Q parse(InputStream in) {
                byte[] bytes;
                try {
                    bytes = in.readAllBytes();
                } catch (IOException e) {
                    throw Status.INTERNAL.withDescription("reading the request failed").withCause(e)
                            .asRuntimeException();
                }
                try {
                    return (Q) parser.parseFrom(bytes);
                } catch (InvalidProtocolBufferException first) {
                    try {
                        Message repaired = parser.parseFrom(repair(bytes, type, 0));
                        if (LOGGED.compareAndSet(false, true)) {
                            LOG.info("a {} request carried fields of another protocol revision (Dapr's fork?) that "
                                    + "do not match this protocol's types; they were dropped", d.getBareMethodName());
                        }
                        return (Q) repaired;
                    } catch (IOException | RuntimeException e) {
                        throw Status.INTERNAL.withDescription("invalid protobuf request: " + first.getMessage())
                                .withCause(first).asRuntimeException();
                    }
                }
            }
        };
        return ServerMethodDefinition.create(d.toBuilder().setRequestMarshaller(marshaller).build(),
                m.getServerCallHandler());
    }

    /**
     * Copies a message's fields, recursing into the message-typed ones and dropping any whose bytes do not parse as
     * the declared message type. Unknown fields are kept as they are.
     */
    static byte[] repair(byte[] bytes, Descriptor type, int depth) throws IOException {
        if (depth > MAX_DEPTH) {
            throw new IOException("message nesting deeper than " + MAX_DEPTH);
        }
        CodedInputStream in = CodedInputStream.newInstance(bytes);
        ByteArrayOutputStream buf = new ByteArrayOutputStream(bytes.length);
        CodedOutputStream out = CodedOutputStream.newInstance(buf);
        while (true) {
            int tag = in.readTag();
            if (tag == 0) {
                break;
            }
            FieldDescriptor f = type.findFieldByNumber(WireFormat.getTagFieldNumber(tag));
            if (f != null && f.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                    && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                ByteString value = in.readBytes();
                byte[] fixed;
                try {
                    fixed = repair(value.toByteArray(), f.getMessageType(), depth + 1);
                    DynamicMessage.parseFrom(f.getMessageType(), fixed);
                } catch (IOException notThatMessage) {
                    continue; // the fork's field under this number: dropped
                }
                out.writeByteArray(f.getNumber(), fixed);
            } else {
                in.skipField(tag, out);
            }
        }
        out.flush();
        return buf.toByteArray();
    }
}
