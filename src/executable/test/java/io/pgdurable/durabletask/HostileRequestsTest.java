package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.RawBytesCall.NOT_UTF8;
import static io.pgdurable.durabletask.RawBytesCall.concat;
import static io.pgdurable.durabletask.RawBytesCall.field;
import static io.pgdurable.durabletask.RawBytesCall.varintField;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Empty;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.StringValue;
import com.google.protobuf.Timestamp;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.pgdurable.durabletask.RawBytesCall.Outcome;
import io.pgdurable.durabletask.protocol.DaprForkAliases.GetInstanceHistoryRequest;
import io.pgdurable.durabletask.protocol.DaprForkAliases.GetInstanceHistoryResponse;
import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsRequest;
import io.pgdurable.durabletask.protocol.DaprTaskHubSidecarAliasesGrpc;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonOrchestrationTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateSubOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateTimerAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceBatch;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstanceFilter;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryEntitiesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ScheduleTaskAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEventAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every RPC of the sidecar under malformed and hostile requests, sent as bytes made by hand where no stub would send
 * them: each is answered with a status naming what is wrong (never UNKNOWN or INTERNAL), a refused request stores
 * nothing (the hub's rows are compared before and after), limits hold, abandoned streams and a flood of connections
 * leave nothing behind, and a well-formed orchestration still completes afterwards. Fuzzed requests are in
 * {@link FuzzedRequestsTest}.
 */
class HostileRequestsTest {
    private static final Duration CALL = Duration.ofSeconds(20);

    private HostileRig rig;

    @BeforeEach
    void start() throws InterruptedException {
        rig = new HostileRig("hostile");
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (rig != null) {
            rig.close();
        }
    }

    /** One hostile request: the method, its bytes, the status it must get and a part of the description. */
    private record Case(String method, byte[] request, Status.Code expected, String mentions) {}

    private static Case refused(String method, MessageLite request, String mentions) {
        return new Case(method, request.toByteArray(), Status.Code.INVALID_ARGUMENT, mentions);
    }

    private static Case refused(String method, byte[] request, String mentions) {
        return new Case(method, request, Status.Code.INVALID_ARGUMENT, mentions);
    }

    private static final byte[] GARBAGE = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF};
    private static final String NUL = "a\0b";
    private static final String LONG = "x".repeat(201);
    private static final Timestamp NO_TIME = Timestamp.newBuilder().setSeconds(Long.MAX_VALUE).build();

    private static List<Case> malformedRequests() {
        List<Case> cases = new ArrayList<>();
        cases.add(refused("Hello", GARBAGE, "not a valid Empty message"));
        cases.add(refused("StartInstance", CreateInstanceRequest.getDefaultInstance(), "name is required"));
        cases.add(refused("StartInstance", CreateInstanceRequest.newBuilder().setName(LONG).build(),
                "201 characters long; at most 200"));
        cases.add(refused("StartInstance", CreateInstanceRequest.newBuilder().setName("N").setInstanceId(NUL)
                .build(), "U+0000"));
        cases.add(refused("StartInstance", CreateInstanceRequest.newBuilder().setName("N").setInstanceId(LONG)
                .build(), "instanceId"));
        cases.add(refused("StartInstance", CreateInstanceRequest.newBuilder().setName("N")
                .setScheduledStartTimestamp(NO_TIME).build(), "scheduledStartTimestamp"));
        cases.add(refused("StartInstance", concat(field(1, NOT_UTF8), field(2, "N")),
                "CreateInstanceRequest.instanceId is not valid UTF-8"));
        cases.add(refused("StartInstance", concat(field(2, "N"), field(4, field(1, NOT_UTF8))),
                "CreateInstanceRequest.input.value is not valid UTF-8"));
        cases.add(refused("StartInstance", concat(field(2, "N"), field(8, concat(field(1, NOT_UTF8), field(2, "v")))),
                "CreateInstanceRequest.tags.key is not valid UTF-8"));
        cases.add(refused("GetInstance", GetInstanceRequest.getDefaultInstance(), "instanceId is required"));
        cases.add(refused("RewindInstance", field(1, ""), "instanceId is required"));
        cases.add(new Case("RewindInstance", field(1, "nobody"), Status.Code.NOT_FOUND, "'nobody' not found"));
        cases.add(refused("RestartInstance", field(1, NUL), "U+0000"));
        cases.add(new Case("RestartInstance", field(1, "nobody"), Status.Code.NOT_FOUND, "'nobody' not found"));
        cases.add(new Case("RestartInstance", field(1, HostileRig.QUEUED), Status.Code.NOT_FOUND, "not found"));
        cases.add(refused("WaitForInstanceStart", new byte[0], "instanceId is required"));
        cases.add(refused("WaitForInstanceCompletion", field(1, NOT_UTF8),
                "GetInstanceRequest.instanceId is not valid UTF-8"));
        cases.add(refused("RaiseEvent", field(1, HostileRig.QUEUED), "name is required"));
        cases.add(refused("RaiseEvent", concat(field(1, HostileRig.QUEUED), field(2, NOT_UTF8)),
                "RaiseEventRequest.name is not valid UTF-8"));
        cases.add(refused("TerminateInstance", new byte[0], "instanceId is required"));
        cases.add(refused("SuspendInstance", field(1, LONG), "at most 200"));
        cases.add(refused("ResumeInstance", concat(field(1, "x"), field(2, field(1, NOT_UTF8))),
                "ResumeRequest.reason.value is not valid UTF-8"));
        cases.add(refused("QueryInstances", QueryInstancesRequest.newBuilder().setQuery(InstanceQuery.newBuilder()
                .setInstanceIdPrefix(StringValue.of(NUL))).build(), "query.instanceIdPrefix"));
        cases.add(refused("QueryInstances", QueryInstancesRequest.newBuilder().setQuery(InstanceQuery.newBuilder()
                .setCreatedTimeFrom(Timestamp.newBuilder().setNanos(-1))).build(), "query.createdTimeFrom"));
        cases.add(refused("ListInstanceIds", ListInstanceIdsRequest.newBuilder().setCompletedTimeTo(NO_TIME).build(),
                "completedTimeTo"));
        cases.add(refused("PurgeInstances", PurgeInstancesRequest.getDefaultInstance(), "name what to purge"));
        cases.add(refused("PurgeInstances", PurgeInstancesRequest.newBuilder().setInstanceBatch(InstanceBatch
                .newBuilder().addInstanceIds(HostileRig.DONE).addInstanceIds("")).build(),
                "instanceBatch.instanceIds[1] is required"));
        cases.add(refused("PurgeInstances", PurgeInstancesRequest.newBuilder().setPurgeInstanceFilter(
                PurgeInstanceFilter.newBuilder().setCreatedTimeTo(NO_TIME)).build(), "createdTimeTo"));
        cases.add(refused("StreamInstanceHistory", new byte[0], "instanceId is required"));
        cases.add(new Case("StreamInstanceHistory", field(1, "nobody"), Status.Code.NOT_FOUND, "not found"));
        cases.add(refused("CreateTaskHub", GARBAGE, "not a valid CreateTaskHubRequest message"));
        // The one request that deletes everything: garbage must not reach it.
        cases.add(refused("DeleteTaskHub", GARBAGE, "not a valid DeleteTaskHubRequest message"));
        cases.add(new Case("SkipGracefulOrchestrationTerminations", new byte[0], Status.Code.UNIMPLEMENTED,
                "never waits for entity locks"));
        cases.add(refused("GetWorkItems", GARBAGE, "not a valid GetWorkItemsRequest message"));
        cases.add(refused("CompleteActivityTask", ActivityResponse.getDefaultInstance(), "instanceId is required"));
        cases.add(refused("CompleteActivityTask", ActivityResponse.newBuilder().setInstanceId(HostileRig.QUEUED)
                .setCompletionToken("forged").build(), "not a completion token this sidecar hands out"));
        cases.add(refused("CompleteOrchestratorTask", OrchestratorResponse.getDefaultInstance(),
                "instanceId is required"));
        cases.add(refused("CompleteEntityTask", EntityBatchResult.getDefaultInstance(), "completionToken is required"));
        cases.add(refused("AbandonTaskActivityWorkItem", new byte[0], "completionToken is required"));
        cases.add(refused("AbandonTaskOrchestratorWorkItem", field(1, "1-2-3"), "not a completion token"));
        cases.add(refused("AbandonTaskEntityWorkItem", field(1, NOT_UTF8),
                "AbandonEntityTaskRequest.completionToken is not valid UTF-8"));
        cases.add(refused("SignalEntity", new byte[0], "instanceId is required"));
        cases.add(refused("SignalEntity", concat(field(1, "@counter@a")), "name is required"));
        cases.add(refused("SignalEntity", concat(field(1, "counter-a"), field(2, "add")), "@name@key"));
        cases.add(refused("GetEntity", new byte[0], "instanceId is required"));
        cases.add(refused("QueryEntities", QueryEntitiesRequest.newBuilder().setQuery(EntityQuery.newBuilder()
                .setLastModifiedFrom(NO_TIME)).build(), "query.lastModifiedFrom"));
        cases.add(refused("CleanEntityStorage", CleanEntityStorageRequest.newBuilder()
                .setContinuationToken(StringValue.of(NUL)).build(), "continuationToken"));
        cases.add(refused("ListInstanceIDs", ListInstanceIDsRequest.newBuilder().setContinuationToken(LONG).build(),
                "at most 200"));
        cases.add(refused("GetInstanceHistory", GetInstanceHistoryRequest.getDefaultInstance(),
                "instanceId is required"));
        // A request message cut short, and one whose field claims more bytes than follow.
        cases.add(refused("GetInstance", new byte[] {0x0A, 0x05, 'a'}, "not a valid GetInstanceRequest message"));
        cases.add(refused("TerminateInstance", new byte[] {0x0A, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
                0x0F}, "not a valid TerminateRequest message"));
        return cases;
    }

    @Test
    void every_rpc_refuses_malformed_requests_naming_what_is_wrong_and_stores_nothing() {
        List<Case> cases = malformedRequests();
        Set<String> served = new TreeSet<>();
        for (ServiceDescriptor s : List.of(TaskHubSidecarServiceGrpc.getServiceDescriptor(),
                DaprTaskHubSidecarAliasesGrpc.getServiceDescriptor())) {
            s.getMethods().forEach(m -> served.add(m.getBareMethodName()));
        }
        Set<String> covered = new TreeSet<>();
        cases.forEach(c -> covered.add(c.method()));
        assertEquals(served, covered, "every RPC the sidecar serves has hostile cases");

        SchemaRows before = rig.rows();
        assertTrue(before.rowCount() > 0, "the seeded hub has rows to lose");
        for (Case c : cases) {
            Outcome out = RawBytesCall.call(rig.channel, c.method(), CALL, c.request());
            String what = c.method() + " with " + describe(c.request());
            assertEquals(c.expected(), out.code(), what + ": " + out);
            assertTrue(out.description().contains(c.mentions()), what + ": the description does not mention '"
                    + c.mentions() + "': " + out);
            assertTrue(!out.description().contains("\tat ") && !out.description().contains("Exception"),
                    what + ": a stack trace or exception in the answer: " + out);
            rig.rows().assertUnchangedSince(before, what);
        }
    }

    @Test
    void a_unary_call_with_no_request_or_two_is_refused_before_the_method_runs() {
        SchemaRows before = rig.rows();
        Outcome none = RawBytesCall.call(rig.channel, "PurgeInstances", CALL);
        assertEquals(Status.Code.INVALID_ARGUMENT, none.code(), none.toString());
        assertTrue(none.description().contains("sent none"), none.toString());
        byte[] purgeDone = PurgeInstancesRequest.newBuilder().setInstanceId(HostileRig.DONE).build().toByteArray();
        Outcome two = RawBytesCall.call(rig.channel, "PurgeInstances", CALL, purgeDone, purgeDone);
        assertEquals(Status.Code.INVALID_ARGUMENT, two.code(), two.toString());
        assertTrue(two.description().contains("sent more"), two.toString());
        rig.rows().assertUnchangedSince(before, "PurgeInstances with no request and with two");
    }

    /**
     * A status this protocol does not know matches no instance. It used to be dropped, which widened the filter: a
     * purge by an unknown status purged every finished instance.
     */
    @Test
    void unknown_status_values_in_a_filter_match_nothing() throws InvalidProtocolBufferException {
        SchemaRows before = rig.rows();
        var query = rig.timed().queryInstances(QueryInstancesRequest.newBuilder().setQuery(InstanceQuery.newBuilder()
                .addRuntimeStatusValue(99)).build());
        assertEquals(0, query.getOrchestrationStateCount(), query.toString());
        var known = rig.timed().queryInstances(QueryInstancesRequest.newBuilder().setQuery(InstanceQuery.newBuilder()
                .addRuntimeStatusValue(99).addRuntimeStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED))
                .build());
        assertEquals(List.of(HostileRig.DONE), known.getOrchestrationStateList().stream()
                .map(s -> s.getInstanceId()).toList());
        var listed = rig.timed().listInstanceIds(ListInstanceIdsRequest.newBuilder().addRuntimeStatusValue(42)
                .build());
        assertEquals(0, listed.getInstanceIdsCount(), listed.toString());
        var purged = rig.timed().purgeInstances(PurgeInstancesRequest.newBuilder().setPurgeInstanceFilter(
                PurgeInstanceFilter.newBuilder().addRuntimeStatusValue(77)).setRecursive(true).build());
        assertEquals(0, purged.getDeletedInstanceCount());
        rig.rows().assertUnchangedSince(before, "a purge by an unknown status");
    }

    @Test
    void worker_results_that_are_malformed_or_of_another_delivery_leave_the_turn_held_and_store_nothing()
            throws Exception {
        try (RawStream worker = new RawStream(rig.hub.sidecar.port(), GetWorkItemsRequest.newBuilder()
                .setMaxConcurrentOrchestrationWorkItems(1).setMaxConcurrentActivityWorkItems(1).build())) {
            WorkItem item = worker.next();
            String id = item.getOrchestratorRequest().getInstanceId();
            assertEquals(HostileRig.QUEUED, id);
            String token = item.getCompletionToken();
            SchemaRows held = rig.rows();

            List<Case> refusals = new ArrayList<>();
            OrchestratorResponse.Builder ok = OrchestratorResponse.newBuilder().setInstanceId(id)
                    .setCompletionToken(token);
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().setInstanceId("").build(),
                    "instanceId is required"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(timer(1)).addActions(timer(1))
                    .build(), "actions[0] and actions[1] both have id 1"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(OrchestratorAction.newBuilder()
                    .setId(3).setCompleteOrchestration(CompleteOrchestrationAction.newBuilder()
                            .setOrchestrationStatusValue(42))).build(), "orchestrationStatus 42 is not"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(OrchestratorAction.newBuilder()
                    .setId(0).setCreateTimer(CreateTimerAction.newBuilder().setFireAt(NO_TIME))).build(),
                    "actions[0].createTimer.fireAt"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(OrchestratorAction.newBuilder()
                    .setId(0).setScheduleTask(ScheduleTaskAction.getDefaultInstance())).build(),
                    "actions[0].scheduleTask.name is required"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(timer(0)).addActions(
                    OrchestratorAction.newBuilder().setId(1).setCreateSubOrchestration(CreateSubOrchestrationAction
                            .newBuilder().setName("Child").setInstanceId(NUL))).build(),
                    "actions[1].createSubOrchestration.instanceId"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(OrchestratorAction.newBuilder()
                    .setId(0).setSendEvent(SendEventAction.newBuilder().setName("e"))).build(),
                    "actions[0].sendEvent.instance.instanceId is required"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().addActions(OrchestratorAction.newBuilder()
                    .setId(0).setSendEvent(SendEventAction.newBuilder().setName(LONG)
                            .setInstance(OrchestrationInstance.newBuilder().setInstanceId("other")))).build(),
                    "actions[0].sendEvent.name"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().setCustomStatus(StringValue.of(NUL)).build(),
                    "customStatus"));
            refusals.add(refused("CompleteOrchestratorTask", ok.clone().setCompletionToken("token-of-nobody")
                    .build(), "not a completion token"));
            OrchestratorResponse.Builder tooMany = ok.clone();
            for (int i = 0; i <= HostileRig.LIMITS.maxActionsPerTurn(); i++) {
                tooMany.addActions(timer(i));
            }
            refusals.add(new Case("CompleteOrchestratorTask", tooMany.build().toByteArray(),
                    Status.Code.RESOURCE_EXHAUSTED, "5001 actions; one turn takes at most 5000 (sidecar setting "
                    + "maxActionsPerTurn)"));
            for (Case c : refusals) {
                Outcome out = RawBytesCall.call(rig.channel, c.method(), CALL, c.request());
                assertEquals(c.expected(), out.code(), c.mentions() + ": " + out);
                assertTrue(out.description().contains(c.mentions()), out.toString());
                rig.rows().assertUnchangedSince(held, "a refused result (" + c.mentions() + ")");
            }

            // Well-formed, but not for an item held under these keys: acknowledged and discarded (an error would make
            // the 1.5.0 worker drop its stream), nothing stored.
            List<MessageLite> discarded = List.of(
                    ok.clone().setCompletionToken("999-999").addActions(complete(0)).build(),
                    ok.clone().setInstanceId("nobody-holds-this").setCompletionToken("").addActions(complete(0))
                            .build(),
                    ActivityResponse.newBuilder().setInstanceId(id).setTaskId(7).setCompletionToken("999-998")
                            .setResult(StringValue.of("1")).build(),
                    EntityBatchResult.newBuilder().setCompletionToken("entity-999-997").build(),
                    AbandonOrchestrationTaskRequest.newBuilder().setCompletionToken("999-996").build());
            List<String> methods = List.of("CompleteOrchestratorTask", "CompleteOrchestratorTask",
                    "CompleteActivityTask", "CompleteEntityTask", "AbandonTaskOrchestratorWorkItem");
            for (int i = 0; i < discarded.size(); i++) {
                Outcome out = RawBytesCall.call(rig.channel, methods.get(i), CALL, discarded.get(i).toByteArray());
                assertEquals(Status.Code.OK, out.code(), methods.get(i) + ": " + out);
                rig.rows().assertUnchangedSince(held, methods.get(i) + " for an item not held under its keys");
            }
            assertEquals(1, rig.hub.sidecar.openWorkerStreams());

            // The turn is still the worker's: its own token completes it.
            rig.timed().completeOrchestratorTask(ok.clone().addActions(complete(0)).build());
            assertEquals(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED, rig.timed().waitForInstanceCompletion(
                    GetInstanceRequest.newBuilder().setInstanceId(id).build()).getOrchestrationState()
                    .getOrchestrationStatus());
        }
    }

    @Test
    void thousands_of_actions_in_one_turn_in_any_id_order_are_committed_whole() throws Exception {
        try (RawStream worker = new RawStream(rig.hub.sidecar.port(), GetWorkItemsRequest.newBuilder()
                .setMaxConcurrentOrchestrationWorkItems(1).setMaxConcurrentActivityWorkItems(1).build())) {
            WorkItem item = worker.next();
            String id = item.getOrchestratorRequest().getInstanceId();
            List<Integer> ids = new ArrayList<>();
            for (int i = 0; i < 3_000; i++) {
                ids.add(i);
            }
            Collections.shuffle(ids, new Random(3_000));
            OrchestratorResponse.Builder turn = OrchestratorResponse.newBuilder().setInstanceId(id)
                    .setCompletionToken(item.getCompletionToken());
            ids.forEach(i -> turn.addActions(timer(i)));
            long t0 = System.nanoTime();
            rig.timed().completeOrchestratorTask(turn.build());
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

            Outcome history = RawBytesCall.call(rig.channel, "GetInstanceHistory", CALL,
                    GetInstanceHistoryRequest.newBuilder().setInstanceId(id).build().toByteArray());
            assertEquals(Status.Code.OK, history.code(), history.toString());
            var events = GetInstanceHistoryResponse.parseFrom(history.messages().get(0)).getEventsList();
            Set<Integer> timerIds = new TreeSet<>();
            events.stream().filter(e -> e.hasTimerCreated()).forEach(e -> timerIds.add(e.getEventId()));
            assertEquals(3_000, timerIds.size(), "timers recorded (turn committed in " + ms + " ms)");
            assertEquals(new TreeSet<>(ids), timerIds);
        }
        rig.awaitNoWorkerStreams();
        rig.assertAWellFormedOrchestrationCompletes();
    }

    @Test
    void requests_beyond_the_message_limit_are_refused_before_they_are_read() {
        assertEquals(16 * 1024 * 1024, RequestLimits.DEFAULTS.maxMessageBytes(), "the documented default");
        assertEquals(16 * 1024 * 1024, SidecarConfig.defaults("s").limits().maxMessageBytes());
        int limit = HostileRig.LIMITS.maxMessageBytes();
        SchemaRows before = rig.rows();
        long heapBefore = usedHeapAfterGc();
        for (int i = 0; i < 40; i++) {
            byte[] big = CreateInstanceRequest.newBuilder().setName("Big").setInstanceId("big-" + i)
                    .setInput(StringValue.of("y".repeat(limit + 10))).build().toByteArray();
            Outcome out = RawBytesCall.call(rig.channel, "StartInstance", CALL, big);
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, out.code(), out.toString());
            assertTrue(out.description().contains(String.valueOf(limit)), "the limit is named: " + out);
        }
        rig.rows().assertUnchangedSince(before, "requests beyond the message limit");
        long grown = usedHeapAfterGc() - heapBefore;
        assertTrue(grown < 64L * 1024 * 1024, "40 refused requests of " + limit + " bytes left " + grown
                + " bytes more on the heap");

        // Just under the limit is served: the limit is the message size, not something smaller.
        Outcome fits = RawBytesCall.call(rig.channel, "StartInstance", CALL, CreateInstanceRequest.newBuilder()
                .setName("Big").setInstanceId("fits").setInput(StringValue.of("y".repeat(limit - 1024))).build()
                .toByteArray());
        assertEquals(Status.Code.OK, fits.code(), fits.toString());
    }

    @Test
    void worker_streams_and_calls_abandoned_midway_leave_nothing_behind() throws Exception {
        Random random = new Random(42);
        byte[] request = GetWorkItemsRequest.newBuilder().setMaxConcurrentOrchestrationWorkItems(1).build()
                .toByteArray();
        for (int i = 0; i < 30; i++) {
            ClientCall<byte[], byte[]> call = rig.channel.newCall(RawBytesCall.method("GetWorkItems"),
                    CallOptions.DEFAULT);
            AtomicInteger items = new AtomicInteger();
            call.start(new ClientCall.Listener<>() {
                @Override
                public void onMessage(byte[] message) {
                    items.incrementAndGet(); // a turn handed to a worker that never answers it
                }
            }, new Metadata());
            call.request(10);
            int stage = random.nextInt(4);
            if (stage >= 1) {
                call.sendMessage(request);
            }
            if (stage >= 2) {
                call.halfClose();
            }
            if (stage == 3) {
                Thread.sleep(random.nextInt(50));
            }
            call.cancel("the test abandons the stream at stage " + stage, null);
        }
        // A big request cancelled while it is being sent, and waits cancelled while they wait.
        ClientCall<byte[], byte[]> big = rig.channel.newCall(RawBytesCall.method("StartInstance"),
                CallOptions.DEFAULT);
        big.start(new ClientCall.Listener<>() {}, new Metadata());
        big.sendMessage(CreateInstanceRequest.newBuilder().setName("Big").setInstanceId("cut")
                .setInput(StringValue.of("z".repeat(900_000))).build().toByteArray());
        big.cancel("cut mid-message", null);
        List<ClientCall<byte[], byte[]>> waits = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            ClientCall<byte[], byte[]> wait = rig.channel.newCall(RawBytesCall.method("WaitForInstanceCompletion"),
                    CallOptions.DEFAULT);
            wait.start(new ClientCall.Listener<>() {}, new Metadata());
            wait.request(1);
            wait.sendMessage(GetInstanceRequest.newBuilder().setInstanceId(HostileRig.QUEUED).build()
                    .toByteArray());
            wait.halfClose();
            waits.add(wait);
        }
        Thread.sleep(100); // the waits are parked by now (there is nothing to observe them by from outside)
        waits.forEach(w -> w.cancel("abandoned", null));

        rig.awaitNoWorkerStreams();
        // Whatever a dead stream held went back: no lease outlives its stream.
        assertTrue(SidecarHarness.eventually(HostileRig.WAIT, () -> lockedInstances() == 0),
                "instances still locked by abandoned streams: " + lockedInstances());
        assertEquals(Status.Code.OK, RawBytesCall.call(rig.channel, "Hello", CALL,
                Empty.getDefaultInstance().toByteArray()).code());
        rig.assertAWellFormedOrchestrationCompletes();
    }

    @Test
    void a_flood_of_connections_and_worker_streams_is_served_within_its_limits_and_let_go() throws Exception {
        long heapBefore = usedHeapAfterGc();
        int channels = 300;
        List<ManagedChannel> opened = new ArrayList<>();
        ConcurrentLinkedQueue<Status> streamErrors = new ConcurrentLinkedQueue<>();
        int hellos = 0;
        for (int i = 0; i < channels; i++) {
            ManagedChannel ch = ManagedChannelBuilder.forAddress("127.0.0.1", rig.hub.sidecar.port()).usePlaintext()
                    .build();
            opened.add(ch);
            TaskHubSidecarServiceGrpc.newBlockingStub(ch).withDeadlineAfter(CALL.toMillis(), TimeUnit.MILLISECONDS)
                    .hello(Empty.getDefaultInstance());
            hellos++;
            if (i % 2 == 0) {
                TaskHubSidecarServiceGrpc.newStub(ch).getWorkItems(GetWorkItemsRequest.getDefaultInstance(),
                        new StreamObserver<>() {
                            @Override
                            public void onNext(WorkItem value) {
                            }

                            @Override
                            public void onError(Throwable t) {
                                streamErrors.add(Status.fromThrowable(t));
                            }

                            @Override
                            public void onCompleted() {
                            }
                        });
            }
        }
        int limit = HostileRig.LIMITS.maxWorkerStreams();
        int asked = channels / 2;
        assertTrue(SidecarHarness.eventually(HostileRig.WAIT, () -> streamErrors.size() == asked - limit
                        && rig.hub.sidecar.openWorkerStreams() == limit),
                "open " + rig.hub.sidecar.openWorkerStreams() + ", refused " + streamErrors.size());
        for (Status s : streamErrors) {
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, s.getCode(), s.toString());
            assertTrue(s.getDescription().contains("maxWorkerStreams"), s.toString());
        }
        assertEquals(channels, hellos);

        for (ManagedChannel ch : opened) {
            ch.shutdownNow();
        }
        for (ManagedChannel ch : opened) {
            assertTrue(ch.awaitTermination(10, TimeUnit.SECONDS));
        }
        rig.awaitNoWorkerStreams();
        assertTrue(SidecarHarness.eventually(HostileRig.WAIT, () -> lockedInstances() == 0),
                "instances still locked by dropped streams: " + lockedInstances());
        long grown = usedHeapAfterGc() - heapBefore;
        assertTrue(grown < 64L * 1024 * 1024, channels + " connections left " + grown + " bytes more on the heap");
        rig.assertAWellFormedOrchestrationCompletes();
    }

    // ------------------------------------------------------------------ helpers

    private long lockedInstances() {
        try (var c = io.pgdurable.postgres.TestDatabase.connect(); var st = c.createStatement();
             var rs = st.executeQuery("SELECT count(*) FROM \"" + rig.hub.schema + "\".instance_locks")) {
            rs.next();
            return rs.getLong(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            used = Math.min(used, rt.totalMemory() - rt.freeMemory());
        }
        return used;
    }

    private static OrchestratorAction timer(int id) {
        return OrchestratorAction.newBuilder().setId(id).setCreateTimer(CreateTimerAction.newBuilder()
                .setFireAt(DtEvents.timestamp(java.time.Instant.parse("2999-01-01T00:00:00Z")))).build();
    }

    private static OrchestratorAction complete(int id) {
        return OrchestratorAction.newBuilder().setId(id).setCompleteOrchestration(CompleteOrchestrationAction
                .newBuilder().setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED)
                .setResult(StringValue.of("\"done\""))).build();
    }

    private static String describe(byte[] request) {
        StringBuilder s = new StringBuilder(request.length + " bytes");
        if (request.length <= 24) {
            s.append(" [");
            for (byte b : request) {
                s.append(String.format("%02x", b));
            }
            s.append(']');
        }
        return s.toString();
    }
}
