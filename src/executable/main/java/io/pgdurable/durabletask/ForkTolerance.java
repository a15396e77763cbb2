package io.pgdurable.durabletask;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Parser;
import com.google.protobuf.WireFormat;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
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

    /**
     * Parses a request that did not parse as this protocol's message again, without the fields whose bytes are not
     * the message this protocol declares; throws when even that does not parse.
     */
    static <Q> Q withoutForeignFields(Parser<Q> parser, Descriptor type, byte[] bytes, String method)
            throws IOException {
        Q repaired = parser.parseFrom(repair(bytes, type, 0));
        if (LOGGED.compareAndSet(false, true)) {
            LOG.info("a {} request carried fields of another protocol revision (Dapr's fork?) that do not match this "
                    + "protocol's types; they were dropped", method);
        }
        return repaired;
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
