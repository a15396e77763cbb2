package io.pgdurable.durabletask;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.WireFormat;
import java.io.IOException;
import java.util.Optional;

/**
 * Finds a string field whose bytes are not UTF-8 in an encoded request. protobuf refuses such a message with a
 * message that names no field; this names the field, so that the client learns which value to fix. Subtrees that do
 * not parse at all are passed over: {@link ForkTolerance} decides about them.
 */
final class Utf8Fields {
    private static final int MAX_DEPTH = 32;

    private Utf8Fields() {}

    /** The path of the first string field that is not UTF-8 (e.g. {@code CreateInstanceRequest.input.value}). */
    static Optional<String> firstInvalid(byte[] message, Descriptor type) {
        try {
            return Optional.ofNullable(walk(CodedInputStream.newInstance(message), type, type.getName(), 0));
        } catch (IOException malformed) {
            return Optional.empty();
        }
    }

    private static String walk(CodedInputStream in, Descriptor type, String path, int depth) throws IOException {
        while (true) {
            int tag = in.readTag();
            if (tag == 0) {
                return null;
            }
            FieldDescriptor f = type.findFieldByNumber(WireFormat.getTagFieldNumber(tag));
            if (f == null || WireFormat.getTagWireType(tag) != WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                in.skipField(tag);
                continue;
            }
            if (f.getType() == FieldDescriptor.Type.STRING) {
                if (!in.readBytes().isValidUtf8()) {
                    return path + "." + f.getName();
                }
            } else if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE && depth < MAX_DEPTH) {
                ByteString nested = in.readBytes();
                String found;
                try {
                    found = walk(nested.newCodedInput(), f.getMessageType(), path + "." + f.getName(), depth + 1);
                } catch (IOException notThatMessage) {
                    continue;
                }
                if (found != null) {
                    return found;
                }
            } else {
                in.skipField(tag);
            }
        }
    }
}
