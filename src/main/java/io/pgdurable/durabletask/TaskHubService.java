package io.pgdurable.durabletask;

import com.google.protobuf.Empty;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ActivityResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CompleteTaskResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CreateInstanceRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CreateInstanceResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CreateTaskHubRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CreateTaskHubResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.DeleteTaskHubRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.DeleteTaskHubResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.GetInstanceRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.GetInstanceResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.GetWorkItemsRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.OrchestratorResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.PurgeInstancesRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.PurgeInstancesResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.QueryInstancesRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.QueryInstancesResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.RaiseEventRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.RaiseEventResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ResumeRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ResumeResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.RewindInstanceRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.RewindInstanceResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.SuspendRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.SuspendResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.TerminateRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.TerminateResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.WorkItem;
import com.microsoft.durabletask.implementation.protobuf.TaskHubSidecarServiceGrpc.TaskHubSidecarServiceImplBase;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.pgdurable.spi.ProviderException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The TaskHubSidecarService RPCs: each handler validates, delegates and maps failures to gRPC statuses. */
final class TaskHubService extends TaskHubSidecarServiceImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(TaskHubService.class);

    private final WorkDispatcher dispatcher;
    private final InstanceClient client;

    TaskHubService(WorkDispatcher dispatcher, InstanceClient client) {
        this.dispatcher = dispatcher;
        this.client = client;
    }

    @FunctionalInterface
    private interface Call<T> {
        T run() throws StatusException;
    }

    private static <T> void answer(StreamObserver<T> out, String rpc, Call<T> call) {
        T result;
        try {
            result = call.run();
        } catch (StatusException e) {
            out.onError(e);
            return;
        } catch (ProviderException e) {
            Status s = e.retryable() ? Status.UNAVAILABLE : Status.INTERNAL;
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
        out.onNext(result);
        out.onCompleted();
    }

    @Override
    public void hello(Empty request, StreamObserver<Empty> out) {
        answer(out, "Hello", () -> Empty.getDefaultInstance());
    }

    @Override
    public void getWorkItems(GetWorkItemsRequest request, StreamObserver<WorkItem> out) {
        dispatcher.open((ServerCallStreamObserver<WorkItem>) out);
    }

    @Override
    public void completeOrchestratorTask(OrchestratorResponse request, StreamObserver<CompleteTaskResponse> out) {
        answer(out, "CompleteOrchestratorTask", () -> {
            dispatcher.completeOrchestration(request);
            return CompleteTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void completeActivityTask(ActivityResponse request, StreamObserver<CompleteTaskResponse> out) {
        answer(out, "CompleteActivityTask", () -> {
            dispatcher.completeActivity(request);
            return CompleteTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void startInstance(CreateInstanceRequest request, StreamObserver<CreateInstanceResponse> out) {
        answer(out, "StartInstance", () -> client.start(request));
    }

    @Override
    public void getInstance(GetInstanceRequest request, StreamObserver<GetInstanceResponse> out) {
        answer(out, "GetInstance", () -> client.get(request.getInstanceId(), request.getGetInputsAndOutputs()));
    }

    @Override
    public void waitForInstanceStart(GetInstanceRequest request, StreamObserver<GetInstanceResponse> out) {
        answer(out, "WaitForInstanceStart",
                () -> client.waitForStart(request.getInstanceId(), request.getGetInputsAndOutputs()));
    }

    @Override
    public void waitForInstanceCompletion(GetInstanceRequest request, StreamObserver<GetInstanceResponse> out) {
        answer(out, "WaitForInstanceCompletion",
                () -> client.waitForCompletion(request.getInstanceId(), request.getGetInputsAndOutputs()));
    }

    @Override
    public void raiseEvent(RaiseEventRequest request, StreamObserver<RaiseEventResponse> out) {
        answer(out, "RaiseEvent", () -> {
            client.raise(request);
            return RaiseEventResponse.getDefaultInstance();
        });
    }

    @Override
    public void terminateInstance(TerminateRequest request, StreamObserver<TerminateResponse> out) {
        answer(out, "TerminateInstance", () -> {
            client.terminate(request);
            return TerminateResponse.getDefaultInstance();
        });
    }

    @Override
    public void suspendInstance(SuspendRequest request, StreamObserver<SuspendResponse> out) {
        answer(out, "SuspendInstance", () -> {
            client.suspend(request);
            return SuspendResponse.getDefaultInstance();
        });
    }

    @Override
    public void resumeInstance(ResumeRequest request, StreamObserver<ResumeResponse> out) {
        answer(out, "ResumeInstance", () -> {
            client.resume(request);
            return ResumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void queryInstances(QueryInstancesRequest request, StreamObserver<QueryInstancesResponse> out) {
        answer(out, "QueryInstances", () -> client.query(request.getQuery()));
    }

    @Override
    public void purgeInstances(PurgeInstancesRequest request, StreamObserver<PurgeInstancesResponse> out) {
        answer(out, "PurgeInstances", () -> {
            int deleted = switch (request.getRequestCase()) {
                case INSTANCEID -> client.purge(request.getInstanceId());
                case PURGEINSTANCEFILTER -> client.purge(request.getPurgeInstanceFilter());
                default -> throw Status.INVALID_ARGUMENT.withDescription("name an instance id or a filter")
                        .asException();
            };
            return PurgeInstancesResponse.newBuilder().setDeletedInstanceCount(deleted).build();
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
        out.onError(Status.UNIMPLEMENTED.withDescription("rewind is not supported by the pgdurable sidecar")
                .asException());
    }
}
