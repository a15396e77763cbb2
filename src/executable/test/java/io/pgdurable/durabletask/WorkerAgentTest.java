package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class WorkerAgentTest {
    @Test
    void a_declared_concurrency_wins_capped_at_the_maximum() {
        assertEquals(5, WorkerAgent.slots(5, "grpc-java-netty/1.59.0"));
        assertEquals(5, WorkerAgent.slots(5, "grpc-node-js/1.12.6"));
        assertEquals(WorkDispatcher.MAX_CONCURRENCY, WorkerAgent.slots(50_000, null));
    }

    @Test
    void without_a_declaration_only_the_java_script_sdk_gets_several() {
        assertEquals(1, WorkerAgent.slots(0, "grpc-java-netty/1.59.0"), "Durable Task for Java 1.5.0");
        assertEquals(1, WorkerAgent.slots(0, null), "no user-agent");
        assertEquals(1, WorkerAgent.slots(-3, "some-client/2.0"));
        assertEquals(WorkerAgent.UNDECLARED_CONCURRENT_SLOTS, WorkerAgent.slots(0, "grpc-node-js/1.12.6"));
        assertEquals(WorkerAgent.UNDECLARED_CONCURRENT_SLOTS,
                WorkerAgent.slots(0, "my-app/3.1 grpc-node-js/1.14.0"));
    }
}
