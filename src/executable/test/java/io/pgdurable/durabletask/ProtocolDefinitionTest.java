package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The sidecar's own protocol definition ({@code src/executable/main/proto}) against the definitions compiled into two SDKs on
 * the test classpath: Durable Task for Java 1.5.0 and Dapr's Durable Task client. Whatever both declare must be
 * declared alike (same field numbers, names, types, labels and oneofs; same enum values; same methods with the same
 * message types and streaming), and a field number the sidecar leaves out must be reserved in its definition, so
 * that it never gives it another type. The SDK suites prove the behaviour; this proves the wire facts directly.
 */
class ProtocolDefinitionTest {
    private static final FileDescriptor OURS = io.pgdurable.durabletask.protocol.OrchestratorService.getDescriptor();
    private static final FileDescriptor JAVA_150 =
            com.microsoft.durabletask.implementation.protobuf.OrchestratorService.getDescriptor();
    private static final FileDescriptor DAPR =
            io.dapr.durabletask.implementation.protobuf.OrchestratorService.getDescriptor();

    @Test
    void the_service_is_task_hub_sidecar_service_without_a_package() {
        assertEquals("", OURS.getPackage());
        assertEquals("TaskHubSidecarService", OURS.findServiceByName("TaskHubSidecarService").getFullName());
    }

    @Test
    void what_java150_declares_is_declared_alike_or_reserved() {
        assertEquals(List.of(), differences(JAVA_150, true));
    }

    /**
     * Dapr's fork adds fields and values of its own (ignored here: they reach the sidecar as unknown fields) and
     * gives a few numbers another type: app-id routers (HistoryEvent 30, OrchestratorAction 9, ScheduleTaskAction 4),
     * a purge flag (PurgeInstancesRequest 4) and, in what the sidecar sends, task execution ids and rerun data where
     * the sidecar puts tags. The list is exact, so a new clash shows up here.
     */
    @Test
    void what_daprs_fork_declares_is_declared_alike_apart_from_its_known_clashes() {
        List<String> clashes = differences(DAPR, false).stream().map(d -> d.substring(0, d.indexOf(' '))).toList();
        assertEquals(List.of("ActivityRequest.7:", "HistoryEvent.30:", "OrchestratorAction.9:",
                "PurgeInstancesRequest.4:", "ScheduleTaskAction.4:", "SubOrchestrationInstanceCreatedEvent.6:",
                "TaskScheduledEvent.5:"), clashes, String.join("\n", differences(DAPR, false)));
    }

    /** Every method 1.5.0 calls is served; the newer ones are there too. */
    @Test
    void every_method_of_java150_is_declared() {
        ServiceDescriptor theirs = JAVA_150.findServiceByName("TaskHubSidecarService");
        ServiceDescriptor ours = OURS.findServiceByName("TaskHubSidecarService");
        for (MethodDescriptor m : theirs.getMethods()) {
            assertTrue(ours.findMethodByName(m.getName()) != null, m.getName());
        }
    }

    /**
     * Differences between the other definition and ours, as lines naming the element. With {@code complete}, a field
     * or enum value of theirs that ours lacks is a difference unless its number is reserved in ours; without, what
     * only they declare is passed over.
     */
    private static List<String> differences(FileDescriptor theirs, boolean complete) {
        List<String> out = new ArrayList<>();
        Map<String, Descriptor> ourMessages = messages(OURS);
        for (Descriptor t : messages(theirs).values()) {
            Descriptor o = ourMessages.get(t.getFullName());
            if (o == null) {
                continue; // a message no RPC of the sidecar reaches
            }
            Set<Integer> reserved = reservedNumbers(o);
            for (FieldDescriptor tf : t.getFields()) {
                String where = t.getFullName() + "." + tf.getNumber();
                FieldDescriptor of = o.findFieldByNumber(tf.getNumber());
                if (of == null) {
                    if (complete && !reserved.contains(tf.getNumber())) {
                        out.add(where + " (" + tf.getName() + ") is neither declared nor reserved");
                    }
                } else if (!describe(of).equals(describe(tf))) {
                    out.add(where + ": ours " + describe(of) + ", theirs " + describe(tf));
                }
            }
        }
        for (EnumDescriptor t : theirs.getEnumTypes()) {
            EnumDescriptor o = OURS.findEnumTypeByName(t.getName());
            if (o == null) {
                continue;
            }
            for (EnumValueDescriptor v : t.getValues()) {
                EnumValueDescriptor ov = o.findValueByNumber(v.getNumber());
                if (ov == null ? complete : !ov.getName().equals(v.getName())) {
                    out.add(t.getName() + " " + v.getNumber() + ": ours " + ov + ", theirs " + v.getName());
                }
            }
        }
        for (ServiceDescriptor ts : theirs.getServices()) {
            ServiceDescriptor os = OURS.findServiceByName(ts.getName());
            for (MethodDescriptor tm : ts.getMethods()) {
                MethodDescriptor om = os == null ? null : os.findMethodByName(tm.getName());
                if (om != null && !describe(om).equals(describe(tm))) {
                    out.add(ts.getName() + "/" + tm.getName() + ": ours " + describe(om) + ", theirs "
                            + describe(tm));
                }
            }
        }
        return out;
    }

    private static Map<String, Descriptor> messages(FileDescriptor file) {
        Map<String, Descriptor> all = new TreeMap<>();
        file.getMessageTypes().forEach(d -> collect(d, all));
        return all;
    }

    private static void collect(Descriptor d, Map<String, Descriptor> all) {
        all.put(d.getFullName(), d);
        d.getNestedTypes().forEach(n -> collect(n, all));
    }

    private static Set<Integer> reservedNumbers(Descriptor d) {
        Set<Integer> numbers = new TreeSet<>();
        for (var range : d.toProto().getReservedRangeList()) {
            for (int n = range.getStart(); n < range.getEnd(); n++) { // the end is exclusive
                numbers.add(n);
            }
        }
        return numbers;
    }

    private static String describe(FieldDescriptor f) {
        String type = switch (f.getType()) {
            case MESSAGE, GROUP -> f.getMessageType().getFullName();
            case ENUM -> f.getEnumType().getFullName();
            default -> f.getType().name();
        };
        String oneof = f.getRealContainingOneof() == null ? "" : " in " + f.getRealContainingOneof().getName();
        return f.getName() + " " + (f.isRepeated() ? "repeated " : "") + type + oneof;
    }

    private static String describe(MethodDescriptor m) {
        return (m.isClientStreaming() ? "stream " : "") + m.getInputType().getFullName() + " -> "
                + (m.isServerStreaming() ? "stream " : "") + m.getOutputType().getFullName();
    }
}
