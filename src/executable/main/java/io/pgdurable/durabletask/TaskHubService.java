package io.pgdurable.durabletask;

import com.google.protobuf.Empty;
import io.pgdurable.durabletask.protocol.DaprForkAliases.GetInstanceHistoryRequest;
import io.pgdurable.durabletask.protocol.DaprForkAliases.GetInstanceHistoryResponse;
import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsRequest;
import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsResponse;
import io.pgdurable.durabletask.protocol.DaprTaskHubSidecarAliasesGrpc;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonActivityTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonActivityTaskResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonEntityTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonEntityTaskResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonOrchestrationTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonOrchestrationTaskResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetEntityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryChunk;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryEntitiesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryEntitiesResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.RestartInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RestartInstanceResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.SkipGracefulOrchestrationTerminationsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SkipGracefulOrchestrationTerminationsResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.StreamInstanceHistoryRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteTaskResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateTaskHubRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateTaskHubResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.DeleteTaskHubRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.DeleteTaskHubResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstancesResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryInstancesResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.RaiseEventRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RaiseEventResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.ResumeRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ResumeResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindInstanceResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.SuspendRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SuspendResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.TerminateRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.TerminateResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.pgdurable.spi.ProviderException;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TaskHubSidecarService RPCs, and the two that Dapr's fork of the protocol names differently
 * ({@code dapr_fork_aliases.proto}): each handler validates, delegates and maps failures to gRPC statuses.
 */
final class TaskHubService implements TaskHubSidecarServiceGrpc.AsyncService,
        DaprTaskHubSidecarAliasesGrpc.AsyncService, io.grpc.BindableService {
    private static final Logger LOG = LoggerFactory.getLogger(TaskHubService.class);

    private final WorkDispatcher dispatcher;
    private final InstanceClient client;
    private final EntityClient entities;
    private final ClientRequestRules clientRules;
    private final WorkerResultRules resultRules;

    TaskHubService(WorkDispatcher dispatcher, InstanceClient client, EntityClient entities, RequestLimits limits) {
        this.dispatcher = dispatcher;
        this.client = client;
        this.entities = entities;
        FieldRules fields = new FieldRules(limits);
        this.clientRules = new ClientRequestRules(fields);
        this.resultRules = new WorkerResultRules(fields);
    }

    /**
     * The service plus the Dapr fork's aliases under the service's name, which is where the fork declares them;
     * requests from SDKs of the fork are read too (see {@link ForkTolerance}).
     */
    @Override
    public ServerServiceDefinition bindService() {
        ServerServiceDefinition service = TaskHubSidecarServiceGrpc.bindService(this);
        String name = service.getServiceDescriptor().getName();
        ServerServiceDefinition.Builder all = ServerServiceDefinition.builder(name);
        service.getMethods().forEach(all::addMethod);
        for (ServerMethodDefinition<?, ?> alias : DaprTaskHubSidecarAliasesGrpc.bindService(this).getMethods()) {
            all.addMethod(servedUnder(name, alias));
        }
        return RequestDecoding.apply(all.build());
    }

    private static <Q, R> ServerMethodDefinition<Q, R> servedUnder(String service, ServerMethodDefinition<Q, R> m) {
        MethodDescriptor<Q, R> d = m.getMethodDescriptor();
        return ServerMethodDefinition.create(d.toBuilder()
                .setFullMethodName(MethodDescriptor.generateFullMethodName(service, d.getBareMethodName())).build(),
                m.getServerCallHandler());
    }

    @FunctionalInterface
    private interface Call<T> {
        T run() throws StatusException;
    }

    private static <T> void answer(StreamObserver<T> out, String rpc, Call<T> call) {
        answer(out, rpc, call, (result, o) -> o.onNext(result));
    }

    /** Runs the call and hands its result to {@code send}, which writes the response message(s), then completes. */
    private static <T, R> void answer(StreamObserver<R> out, String rpc, Call<T> call,
                                      BiConsumer<T, StreamObserver<R>> send) {
        T result;
        try {
            result = call.run();
        } catch (StatusException e) {
            // Named after the RPC, as every other failure is: the caller may not know which call of its SDK it was.
            String why = e.getStatus().getDescription();
            out.onError(e.getStatus().withDescription(why == null || why.startsWith(rpc + ": ") ? why
                    : rpc + ": " + why).asException(e.getTrailers()));
            return;
        } catch (ProviderException e) {
            Status s = e.retryable() ? Status.UNAVAILABLE : badData(e) ? Status.INVALID_ARGUMENT : Status.INTERNAL;
            LOG.debug("{} failed: {}", rpc, e.getMessage());
            out.onError(s.withDescription(rpc + ": " + e.getMessage()).asException());
            return;
        } catch (IllegalArgumentException e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(rpc + ": " + e.getMessage()).asException());
            return;
        } catch (RuntimeException e) {
            LOG.error("{} failed", rpc, e);
            out.onError(Status.INTERNAL.withDescription(rpc + ": " + e).asException());
            return;
        }
        send.accept(result, out);
        out.onCompleted();
    }

    /**
     * A database error of class 22 (data exception: a value out of range, an invalid character) comes from a value
     * of the request that the checks let through: the caller's to fix, not the sidecar's.
     */
    private static boolean badData(ProviderException e) {
        return e.sqlState().filter(state -> state.startsWith("22")).isPresent();
    }

    @Override
    public void hello(Empty request, StreamObserver<Empty> out) {
        answer(out, "Hello", () -> Empty.getDefaultInstance());
    }

    @Override
    public void getWorkItems(GetWorkItemsRequest request, StreamObserver<WorkItem> out) {
        dispatcher.open(request, (ServerCallStreamObserver<WorkItem>) out);
    }

    @Override
    public void completeOrchestratorTask(OrchestratorResponse request, StreamObserver<CompleteTaskResponse> out) {
        answer(out, "CompleteOrchestratorTask", () -> {
            resultRules.orchestratorResponse(request);
            dispatcher.completeOrchestration(request);
            return CompleteTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void completeActivityTask(ActivityResponse request, StreamObserver<CompleteTaskResponse> out) {
        answer(out, "CompleteActivityTask", () -> {
            resultRules.activityResponse(request);
            dispatcher.completeActivity(request);
            return CompleteTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void startInstance(CreateInstanceRequest request, StreamObserver<CreateInstanceResponse> out) {
        answer(out, "StartInstance", () -> {
            clientRules.start(request);
            if (EntityBatches.isEntityId(request.getInstanceId())) {
                throw new IllegalArgumentException("instance ids of the form @name@key are durable entities; an "
                        + "orchestration cannot be started as '" + request.getInstanceId() + "'");
            }
            return client.start(request);
        });
    }

    @Override
    public void getInstance(GetInstanceRequest request, StreamObserver<GetInstanceResponse> out) {
        answer(out, "GetInstance",
                () -> client.get(instance(request.getInstanceId()), request.getGetInputsAndOutputs()));
    }

    @Override
    public void waitForInstanceStart(GetInstanceRequest request, StreamObserver<GetInstanceResponse> out) {
        answer(out, "WaitForInstanceStart",
                () -> client.waitForStart(instance(request.getInstanceId()), request.getGetInputsAndOutputs()));
    }

    @Override
    public void waitForInstanceCompletion(GetInstanceRequest request, StreamObserver<GetInstanceResponse> out) {
        answer(out, "WaitForInstanceCompletion",
                () -> client.waitForCompletion(instance(request.getInstanceId()),
                        request.getGetInputsAndOutputs()));
    }

    @Override
    public void raiseEvent(RaiseEventRequest request, StreamObserver<RaiseEventResponse> out) {
        answer(out, "RaiseEvent", () -> {
            clientRules.raise(request);
            client.raise(request);
            return RaiseEventResponse.getDefaultInstance();
        });
    }

    @Override
    public void terminateInstance(TerminateRequest request, StreamObserver<TerminateResponse> out) {
        answer(out, "TerminateInstance", () -> {
            clientRules.instance(request.getInstanceId());
            client.terminate(request);
            return TerminateResponse.getDefaultInstance();
        });
    }

    @Override
    public void suspendInstance(SuspendRequest request, StreamObserver<SuspendResponse> out) {
        answer(out, "SuspendInstance", () -> {
            clientRules.instance(request.getInstanceId());
            client.suspend(request);
            return SuspendResponse.getDefaultInstance();
        });
    }

    @Override
    public void resumeInstance(ResumeRequest request, StreamObserver<ResumeResponse> out) {
        answer(out, "ResumeInstance", () -> {
            clientRules.instance(request.getInstanceId());
            client.resume(request);
            return ResumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void queryInstances(QueryInstancesRequest request, StreamObserver<QueryInstancesResponse> out) {
        answer(out, "QueryInstances", () -> {
            clientRules.query(request.getQuery());
            return client.query(request.getQuery());
        });
    }

    @Override
    public void listInstanceIds(ListInstanceIdsRequest request, StreamObserver<ListInstanceIdsResponse> out) {
        answer(out, "ListInstanceIds", () -> {
            clientRules.list(request);
            return client.listInstanceIds(request);
        });
    }

    /** Dapr's fork: {@link #listInstanceIds} under its own name and paging fields. */
    @Override
    public void listInstanceIDs(ListInstanceIDsRequest request, StreamObserver<ListInstanceIDsResponse> out) {
        answer(out, "ListInstanceIDs", () -> {
            clientRules.list(request);
            return client.listInstanceIds(request);
        });
    }

    /** The history of the instance's current execution, in chunks of at most {@value #HISTORY_CHUNK} events. */
    @Override
    public void streamInstanceHistory(StreamInstanceHistoryRequest request, StreamObserver<HistoryChunk> out) {
        answer(out, "StreamInstanceHistory", () -> client.history(instance(request.getInstanceId())),
                (events, o) -> {
                    for (int i = 0; i < events.size(); i += HISTORY_CHUNK) {
                        o.onNext(HistoryChunk.newBuilder()
                                .addAllEvents(events.subList(i, Math.min(events.size(), i + HISTORY_CHUNK))).build());
                    }
                });
    }

    /** Dapr's fork: the same history as {@link #streamInstanceHistory}, in one response. */
    @Override
    public void getInstanceHistory(GetInstanceHistoryRequest request, StreamObserver<GetInstanceHistoryResponse> out) {
        answer(out, "GetInstanceHistory", () -> GetInstanceHistoryResponse.newBuilder()
                .addAllEvents(client.history(instance(request.getInstanceId()))).build());
    }

    static final int HISTORY_CHUNK = 200;

    /** The instance id of a request that names one, checked. */
    private String instance(String instanceId) throws StatusException {
        clientRules.instance(instanceId);
        return instanceId;
    }

    @Override
    public void restartInstance(RestartInstanceRequest request, StreamObserver<RestartInstanceResponse> out) {
        answer(out, "RestartInstance", () -> {
            clientRules.instance(request.getInstanceId());
            return RestartInstanceResponse.newBuilder().setInstanceId(client.restart(request).getInstanceId())
                    .build();
        });
    }

    @Override
    public void abandonTaskOrchestratorWorkItem(AbandonOrchestrationTaskRequest request,
                                                StreamObserver<AbandonOrchestrationTaskResponse> out) {
        answer(out, "AbandonTaskOrchestratorWorkItem", () -> {
            FieldRules.requireToken("completionToken", request.getCompletionToken());
            dispatcher.abandon(request.getCompletionToken());
            return AbandonOrchestrationTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void abandonTaskActivityWorkItem(AbandonActivityTaskRequest request,
                                            StreamObserver<AbandonActivityTaskResponse> out) {
        answer(out, "AbandonTaskActivityWorkItem", () -> {
            FieldRules.requireToken("completionToken", request.getCompletionToken());
            dispatcher.abandon(request.getCompletionToken());
            return AbandonActivityTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void signalEntity(SignalEntityRequest request, StreamObserver<SignalEntityResponse> out) {
        answer(out, "SignalEntity", () -> {
            clientRules.signal(request);
            entities.signal(request);
            return SignalEntityResponse.getDefaultInstance();
        });
    }

    @Override
    public void getEntity(GetEntityRequest request, StreamObserver<GetEntityResponse> out) {
        answer(out, "GetEntity", () -> entities.get(instance(request.getInstanceId()), request.getIncludeState()));
    }

    @Override
    public void queryEntities(QueryEntitiesRequest request, StreamObserver<QueryEntitiesResponse> out) {
        answer(out, "QueryEntities", () -> {
            clientRules.query(request.getQuery());
            return entities.query(request.getQuery());
        });
    }

    @Override
    public void cleanEntityStorage(CleanEntityStorageRequest request, StreamObserver<CleanEntityStorageResponse> out) {
        answer(out, "CleanEntityStorage", () -> {
            clientRules.clean(request);
            return entities.clean(request);
        });
    }

    @Override
    public void completeEntityTask(EntityBatchResult request, StreamObserver<CompleteTaskResponse> out) {
        answer(out, "CompleteEntityTask", () -> {
            FieldRules.requireToken("completionToken", request.getCompletionToken());
            dispatcher.completeEntity(request);
            return CompleteTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void abandonTaskEntityWorkItem(AbandonEntityTaskRequest request,
                                          StreamObserver<AbandonEntityTaskResponse> out) {
        answer(out, "AbandonTaskEntityWorkItem", () -> {
            FieldRules.requireToken("completionToken", request.getCompletionToken());
            dispatcher.abandon(request.getCompletionToken());
            return AbandonEntityTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void skipGracefulOrchestrationTerminations(SkipGracefulOrchestrationTerminationsRequest request,
            StreamObserver<SkipGracefulOrchestrationTerminationsResponse> out) {
        // Terminations here never wait for an orchestration's entity locks, so there is nothing to skip.
        out.onError(Status.UNIMPLEMENTED.withDescription("SkipGracefulOrchestrationTerminations: the pgdurable "
                + "sidecar terminates at once and never waits for entity locks; a terminated orchestration's locks "
                + "are released as its execution ends").asException());
    }

    @Override
    public void purgeInstances(PurgeInstancesRequest request, StreamObserver<PurgeInstancesResponse> out) {
        answer(out, "PurgeInstances", () -> {
            clientRules.purge(request);
            boolean keepChildren = !request.getRecursive() && WorkerAgent.choosesPurgeRecursion(WorkerAgent.current());
            int deleted = switch (request.getRequestCase()) {
                case INSTANCEID -> client.purge(request.getInstanceId(), keepChildren);
                case PURGEINSTANCEFILTER -> client.purge(request.getPurgeInstanceFilter(), keepChildren);
                case INSTANCEBATCH -> {
                    int n = 0;
                    for (String id : request.getInstanceBatch().getInstanceIdsList()) {
                        n += client.purge(id, keepChildren);
                    }
                    yield n;
                }
                default -> throw Status.INVALID_ARGUMENT.withDescription("name an instance id or a filter")
                        .asException();
            };
            return PurgeInstancesResponse.newBuilder().setDeletedInstanceCount(deleted)
                    .setIsComplete(com.google.protobuf.BoolValue.of(true)).build();
        });
    }

    @Override
    public void createTaskHub(CreateTaskHubRequest request, StreamObserver<CreateTaskHubResponse> out) {
        answer(out, "CreateTaskHub", () -> {
            // The schema exists already (the provider migrates it); "recreate" means starting empty.
            if (request.getRecreateIfExists()) {
                client.deleteAllInstances();
            }
            return CreateTaskHubResponse.getDefaultInstance();
        });
    }

    @Override
    public void deleteTaskHub(DeleteTaskHubRequest request, StreamObserver<DeleteTaskHubResponse> out) {
        answer(out, "DeleteTaskHub", () -> {
            client.deleteAllInstances();
            return DeleteTaskHubResponse.getDefaultInstance();
        });
    }

    @Override
    public void rewindInstance(RewindInstanceRequest request, StreamObserver<RewindInstanceResponse> out) {
        answer(out, "RewindInstance", () -> {
            clientRules.instance(request.getInstanceId());
            client.rewind(request);
            return RewindInstanceResponse.getDefaultInstance();
        });
    }
}
