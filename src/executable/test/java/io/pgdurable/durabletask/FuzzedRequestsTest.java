package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.Empty;
import com.google.protobuf.Int32Value;
import com.google.protobuf.MessageLite;
import com.google.protobuf.StringValue;
import com.google.protobuf.Timestamp;
import io.grpc.Status;
import io.pgdurable.durabletask.RawBytesCall.Outcome;
import io.pgdurable.durabletask.protocol.DaprForkAliases.GetInstanceHistoryRequest;
import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonActivityTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonEntityTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonOrchestrationTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateTimerAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceBatch;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstanceFilter;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryEntitiesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RaiseEventRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RestartInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ResumeRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SkipGracefulOrchestrationTerminationsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.StreamInstanceHistoryRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SuspendRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.TerminateRequest;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Generated hostile input: valid requests of every RPC that a client can send without a worker stream, mutated by a
 * seeded random generator (bit flips, truncation, a range of bytes repeated, random bytes inserted, extreme byte
 * values, a field appended that is not UTF-8 or claims more bytes than follow). Whatever comes out, the answer is a
 * status a client can act on (never UNKNOWN or INTERNAL), a refusal names its reason, and a refused request leaves
 * every row of the hub as it was. The seed is {@code -Dpgdurable.fuzz.seed}, and a failure names it.
 *
 * <p>Not fuzzed here: GetWorkItems (an accepted stream fetches and leases in the background, so rows change without
 * a request; abandoned streams are in {@link HostileRequestsTest}), CreateTaskHub and DeleteTaskHub (an accepted one
 * empties the hub, after which the rest of the run would fuzz an empty hub; their malformed requests are there too).
 */
class FuzzedRequestsTest {
    private static final int ROUNDS = 600;
    private static final Duration CALL = Duration.ofSeconds(20);
    /** Waits for a status that may never come end at their deadline, which is then the expected answer. */
    private static final Duration WAIT_CALL = Duration.ofMillis(300);
    private static final Set<Status.Code> ACTIONABLE = Set.of(Status.Code.OK, Status.Code.INVALID_ARGUMENT,
            Status.Code.NOT_FOUND, Status.Code.FAILED_PRECONDITION, Status.Code.ALREADY_EXISTS,
            Status.Code.RESOURCE_EXHAUSTED, Status.Code.DEADLINE_EXCEEDED, Status.Code.UNIMPLEMENTED);

    private HostileRig rig;

    @BeforeEach
    void start() throws InterruptedException {
        rig = new HostileRig("fuzz");
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (rig != null) {
            rig.close();
        }
    }

    private record Seed(String method, byte[] request) {}

    private static Seed seed(String method, MessageLite request) {
        return new Seed(method, request.toByteArray());
    }

    /** One valid request per RPC, naming the seeded instances so that the mutations reach stored state. */
    private static List<Seed> corpus() {
        String done = HostileRig.DONE;
        String queued = HostileRig.QUEUED;
        Timestamp later = DtEvents.timestamp(java.time.Instant.parse("2999-01-01T00:00:00Z"));
        return List.of(
                seed("Hello", Empty.getDefaultInstance()),
                seed("StartInstance", CreateInstanceRequest.newBuilder().setName("Fuzzed").setInstanceId("fz-1")
                        .setVersion(StringValue.of("1")).setInput(StringValue.of("\"x\"")).putTags("k", "v")
                        .setScheduledStartTimestamp(later).build()),
                seed("GetInstance", GetInstanceRequest.newBuilder().setInstanceId(done).setGetInputsAndOutputs(true)
                        .build()),
                seed("WaitForInstanceStart", GetInstanceRequest.newBuilder().setInstanceId(queued).build()),
                seed("WaitForInstanceCompletion", GetInstanceRequest.newBuilder().setInstanceId(done).build()),
                seed("RewindInstance", RewindInstanceRequest.newBuilder().setInstanceId(done)
                        .setReason(StringValue.of("r")).build()),
                seed("RestartInstance", RestartInstanceRequest.newBuilder().setInstanceId(done)
                        .setRestartWithNewInstanceId(true).build()),
                seed("RaiseEvent", RaiseEventRequest.newBuilder().setInstanceId(queued).setName("go")
                        .setInput(StringValue.of("1")).build()),
                seed("TerminateInstance", TerminateRequest.newBuilder().setInstanceId(queued)
                        .setOutput(StringValue.of("t")).setRecursive(true).build()),
                seed("SuspendInstance", SuspendRequest.newBuilder().setInstanceId(queued)
                        .setReason(StringValue.of("s")).build()),
                seed("ResumeInstance", ResumeRequest.newBuilder().setInstanceId(queued).build()),
                seed("QueryInstances", QueryInstancesRequest.newBuilder().setQuery(InstanceQuery.newBuilder()
                        .addRuntimeStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED).setMaxInstanceCount(10)
                        .setInstanceIdPrefix(StringValue.of("seed")).setFetchInputsAndOutputs(true)
                        .setCreatedTimeFrom(Timestamp.newBuilder().setSeconds(1))).build()),
                seed("ListInstanceIds", ListInstanceIdsRequest.newBuilder().setPageSize(5)
                        .addRuntimeStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED).build()),
                seed("PurgeInstances", PurgeInstancesRequest.newBuilder().setInstanceId("fz-none").build()),
                seed("PurgeInstances", PurgeInstancesRequest.newBuilder().setInstanceBatch(InstanceBatch.newBuilder()
                        .addInstanceIds("fz-a").addInstanceIds("fz-b")).build()),
                seed("PurgeInstances", PurgeInstancesRequest.newBuilder().setPurgeInstanceFilter(PurgeInstanceFilter
                        .newBuilder().addRuntimeStatus(OrchestrationStatus.ORCHESTRATION_STATUS_FAILED)).build()),
                seed("StreamInstanceHistory", StreamInstanceHistoryRequest.newBuilder().setInstanceId(done).build()),
                seed("SkipGracefulOrchestrationTerminations",
                        SkipGracefulOrchestrationTerminationsRequest.getDefaultInstance()),
                seed("CompleteActivityTask", ActivityResponse.newBuilder().setInstanceId(queued).setTaskId(1)
                        .setResult(StringValue.of("1")).setCompletionToken("1-1").build()),
                seed("CompleteOrchestratorTask", OrchestratorResponse.newBuilder().setInstanceId(queued)
                        .setCompletionToken("1-2")
                        .addActions(OrchestratorAction.newBuilder().setId(0).setCreateTimer(CreateTimerAction
                                .newBuilder().setFireAt(later)))
                        .addActions(OrchestratorAction.newBuilder().setId(1).setCompleteOrchestration(
                                CompleteOrchestrationAction.newBuilder().setOrchestrationStatus(
                                        OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED))).build()),
                seed("CompleteEntityTask", EntityBatchResult.newBuilder().setCompletionToken("entity-1-3")
                        .setEntityState(StringValue.of("5")).build()),
                seed("AbandonTaskActivityWorkItem", AbandonActivityTaskRequest.newBuilder().setCompletionToken("1-4")
                        .build()),
                seed("AbandonTaskOrchestratorWorkItem", AbandonOrchestrationTaskRequest.newBuilder()
                        .setCompletionToken("1-5").build()),
                seed("AbandonTaskEntityWorkItem", AbandonEntityTaskRequest.newBuilder()
                        .setCompletionToken("entity-1-6").build()),
                seed("SignalEntity", SignalEntityRequest.newBuilder().setInstanceId("@counter@a").setName("add")
                        .setInput(StringValue.of("1")).setRequestId("req-1").build()),
                seed("GetEntity", GetEntityRequest.newBuilder().setInstanceId("@counter@a").setIncludeState(true)
                        .build()),
                seed("QueryEntities", QueryEntitiesRequest.newBuilder().setQuery(EntityQuery.newBuilder()
                        .setInstanceIdStartsWith(StringValue.of("@counter")).setPageSize(Int32Value.of(5))
                        .setIncludeState(true)).build()),
                seed("CleanEntityStorage", CleanEntityStorageRequest.newBuilder().setRemoveEmptyEntities(true)
                        .setReleaseOrphanedLocks(true).build()),
                seed("ListInstanceIDs", ListInstanceIDsRequest.newBuilder().setPageSize(5).build()),
                seed("GetInstanceHistory", GetInstanceHistoryRequest.newBuilder().setInstanceId(done).build()));
    }

    @Test
    void mutated_requests_get_an_actionable_status_and_refused_ones_store_nothing() throws Exception {
        long seed = Long.getLong("pgdurable.fuzz.seed", 20_261_207L);
        Random random = new Random(seed);
        List<Seed> corpus = corpus();
        Map<Status.Code, Integer> seen = new EnumMap<>(Status.Code.class);
        SchemaRows rows = rig.rows();
        for (int round = 0; round < ROUNDS; round++) {
            Seed s = corpus.get(random.nextInt(corpus.size()));
            byte[] request = mutate(s.request(), random);
            boolean waits = s.method().startsWith("WaitFor");
            Outcome out = RawBytesCall.call(rig.channel, s.method(), waits ? WAIT_CALL : CALL, request);
            String what = "seed " + seed + ", round " + round + ": " + s.method() + " with "
                    + hex(request) + " -> " + out;
            seen.merge(out.code(), 1, Integer::sum);
            if (!ACTIONABLE.contains(out.code())) {
                fail(what + ": not a status for a client's own mistake");
            }
            if (out.code() == Status.Code.OK) {
                rows = rig.rows(); // an accepted request may store; the next refusal is compared with this
                continue;
            }
            if (out.description().isBlank() || out.description().contains("Exception")) {
                fail(what + ": the refusal does not say what was wrong");
            }
            rig.rows().assertUnchangedSince(rows, what);
        }
        int refused = seen.getOrDefault(Status.Code.INVALID_ARGUMENT, 0);
        int accepted = seen.getOrDefault(Status.Code.OK, 0);
        // The generator reaches both sides: enough refusals to test them, enough acceptances to change state.
        assertTrue(refused >= ROUNDS / 5, "only " + refused + " refusals in " + ROUNDS + " rounds: " + seen);
        assertTrue(accepted >= ROUNDS / 10, "only " + accepted + " acceptances in " + ROUNDS + " rounds: " + seen);
        System.out.println("fuzzed " + ROUNDS + " requests (seed " + seed + "): " + seen);

        assertEquals(Status.Code.OK, RawBytesCall.call(rig.channel, "Hello", CALL, new byte[0]).code());
        rig.assertAWellFormedOrchestrationCompletesAmongStrayWork();
    }

    /** One to three mutations of a valid request's bytes. */
    static byte[] mutate(byte[] valid, Random random) {
        byte[] b = valid;
        int times = 1 + random.nextInt(3);
        for (int i = 0; i < times; i++) {
            b = switch (random.nextInt(7)) {
                case 0 -> flipBit(b, random);
                case 1 -> Arrays.copyOf(b, b.length == 0 ? 0 : random.nextInt(b.length));
                case 2 -> repeatRange(b, random);
                case 3 -> insert(b, random.nextInt(b.length + 1), randomBytes(random, 1 + random.nextInt(8)));
                case 4 -> extremeByte(b, random);
                case 5 -> RawBytesCall.concat(b, RawBytesCall.field(1 + random.nextInt(12), RawBytesCall.NOT_UTF8));
                default -> RawBytesCall.concat(b, new byte[] {(byte) ((1 + random.nextInt(12)) << 3 | 2),
                        (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x0F});
            };
        }
        return b;
    }

    private static byte[] flipBit(byte[] b, Random random) {
        if (b.length == 0) {
            return randomBytes(random, 1);
        }
        byte[] out = b.clone();
        out[random.nextInt(out.length)] ^= (byte) (1 << random.nextInt(8));
        return out;
    }

    /** A range of bytes written twice in a row, which repeats whole fields when it falls on their bounds. */
    private static byte[] repeatRange(byte[] b, Random random) {
        int from = random.nextInt(b.length + 1);
        int to = from + random.nextInt(b.length - from + 1);
        return insert(b, to, Arrays.copyOfRange(b, from, to));
    }

    private static byte[] extremeByte(byte[] b, Random random) {
        if (b.length == 0) {
            return new byte[] {(byte) 0xFF};
        }
        byte[] out = b.clone();
        byte[] extremes = {0x00, 0x7F, (byte) 0x80, (byte) 0xFF, (byte) 0xC3};
        out[random.nextInt(out.length)] = extremes[random.nextInt(extremes.length)];
        return out;
    }

    private static byte[] insert(byte[] b, int at, byte[] part) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(b.length + part.length);
        out.write(b, 0, at);
        out.writeBytes(part);
        out.write(b, at, b.length - at);
        return out.toByteArray();
    }

    private static byte[] randomBytes(Random random, int n) {
        byte[] out = new byte[n];
        random.nextBytes(out);
        return out;
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < Math.min(b.length, 80); i++) {
            s.append(String.format("%02x", b[i]));
        }
        return s.append(b.length > 80 ? "... (" + b.length + " bytes)" : "").toString();
    }
}
