package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** Conformance module {@code error_handling} (CONTRACT §7.2): invalid input is rejected with the right error. */
public abstract class ErrorHandlingTests extends ConformanceTestBase {

    /** An ack with a token that was never issued fails permanently and says why. */
    @Test
    void test_invalid_lock_token_on_ack() {
        OrchestrationProvider p = newProvider();
        ProviderException e = expectPermanentError("an ack with a never-issued token",
                () -> ackEmpty(p, "invalid-token", 1));
        String message = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
        assertTrue(message.contains("invalid lock token") || message.contains("lock_token"),
                "the error should name the lock token problem, was: " + e.getMessage());
    }

    /** A second turn that reuses event id 1 fails and leaves the original event alone. */
    @Test
    void test_duplicate_event_id_rejection() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration first = fetchOrchRequired(p, "the start");
        ack(p, first.lockToken(), 1, List.of(startedEvent(1)), ExecutionMetadata.empty());

        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration second = fetchOrchRequired(p, "the second message");
        expectPermanentError("an ack with a duplicate event id", () -> ack(p, second.lockToken(), 1,
                List.of(Events.activityScheduled(1, "Activity", "{}")), ExecutionMetadata.empty()));

        List<Event> history = p.read("instance-A");
        assertEquals(1, history.size(), "history unchanged: " + history);
        assertEquals(Events.ORCHESTRATION_STARTED, history.get(0).type(), "the original event is kept");
        assertEquals(1, history.get(0).eventId());
    }

    /** Reading an instance that does not exist gives an empty history, not an error. */
    @Test
    void test_missing_instance_metadata() {
        OrchestrationProvider p = newProvider();
        List<Event> history = p.read("non-existent-instance");
        assertNotNull(history, "read() of an unknown instance must return a list");
        assertEquals(0, history.size(), "read() of an unknown instance");
        List<Event> execution = p.readWithExecution("non-existent-instance", 1);
        assertNotNull(execution, "readWithExecution() of an unknown instance must return a list");
        assertEquals(0, execution.size(), "readWithExecution() of an unknown instance");
    }

    /** Fetching from an empty store completes normally and finds nothing on either queue. */
    @Test
    void test_corrupted_serialization_data() {
        OrchestrationProvider p = newProvider();
        assertFalse(fetchOrch(p).isPresent(), "an empty store has no orchestration item");
        assertFalse(fetchWork(p).isPresent(), "an empty store has no work item");
    }

    /** An ack after the instance lock expired is rejected and commits nothing. */
    @Test
    void test_lock_expiration_during_ack() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f = fetchOrchRequired(p, lockTimeout(), "the start");
        long lockedAt = now();
        assertNoOrchItem(p, "the instance is locked before expiry");

        sleepPastLockExpiry(lockedAt);
        expectPermanentError("an ack after the lock expired",
                () -> ack(p, f.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata()));
        assertEquals(0, p.read("instance-A").size(), "the rejected ack must not write history");
    }

    /** read() of a history that cannot be decoded fails instead of returning fewer events. */
    @Test
    void test_read_corrupted_history_returns_error() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "inst-read-corrupt");
        assertFalse(p.read("inst-read-corrupt").isEmpty(), "history before corruption");

        factory.corruptInstanceHistory("inst-read-corrupt");
        expectPermanentError("read() of a corrupted history", () -> p.read("inst-read-corrupt"));
    }

    /** readWithExecution() of a history that cannot be decoded fails instead of returning fewer events. */
    @Test
    void test_read_with_execution_corrupted_history_returns_error() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "inst-rwe-corrupt");
        assertFalse(p.readWithExecution("inst-rwe-corrupt", 1).isEmpty(), "history before corruption");

        factory.corruptInstanceHistory("inst-rwe-corrupt");
        expectPermanentError("readWithExecution() of a corrupted history",
                () -> p.readWithExecution("inst-rwe-corrupt", 1));
    }
}
