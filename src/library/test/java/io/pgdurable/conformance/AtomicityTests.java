package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Conformance module {@code atomicity} (CONTRACT §7.1): an orchestration ack commits all of a turn or nothing. */
public abstract class AtomicityTests extends ConformanceTestBase {

    /** A failing ack (duplicate event id) rolls everything back and keeps the instance lock. */
    @Test
    void test_atomicity_failure_rollback() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration first = fetchOrchRequired(p, "the start");
        ack(p, first.lockToken(), 1, List.of(startedEvent(1)), ExecutionMetadata.empty());
        assertEquals(1, p.read("instance-A").size(), "baseline history");

        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration second = fetchOrchRequired(p, "the second message");
        expectPermanentError("an ack that reuses event id 1", () -> ack(p, second.lockToken(), 1,
                List.of(startedEvent(1)), List.of(activity("instance-A", 7, "Rolled", "back")),
                List.of(poke("instance-A")), ExecutionMetadata.empty()));

        assertEquals(1, p.read("instance-A").size(), "history must be unchanged after the failed ack");
        assertNoOrchItem(p, "the instance lock must still be held after a failed ack");
        assertNoWorkItem(p, "the failed ack's worker item must have been rolled back");

        // The batch was not consumed: releasing the still-valid lock makes the same message fetchable again.
        p.abandonOrchestrationItem(second.lockToken(), null, false);
        FetchedOrchestration again = fetchOrchRequired(p, "the message of the rolled-back turn");
        assertEquals("instance-A", again.item().instance());
        assertEquals(1, again.item().messages().size(),
                "only the rolled-back turn's message: " + again.item().messages());
        assertInstanceOf(WorkItem.StartOrchestration.class, again.item().messages().get(0));
    }

    /** One ack with 5 events, 3 activities and 2 orchestrator messages commits all of them. */
    @Test
    void test_multi_operation_atomic_ack() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");

        List<Event> delta = List.of(
                startedEvent(1),
                Events.activityScheduled(2, "Activity1", "input1"),
                Events.activityScheduled(3, "Activity2", "input2"),
                Events.activityScheduled(4, "Activity3", "input3"),
                Events.timerCreated(5, 1234567890L));
        List<WorkItem> workerItems = List.of(
                activity("instance-A", 1, "Activity1", "input1"),
                activity("instance-A", 2, "Activity2", "input2"),
                activity("instance-A", 3, "Activity3", "input3"));
        List<WorkItem> orchestratorItems = List.of(
                new WorkItem.TimerFired("instance-A", 1, 1, 1234567890L),
                new WorkItem.ExternalRaised("instance-A", "TestEvent", "test-data"));
        ack(p, f.lockToken(), 1, delta, workerItems, orchestratorItems, ExecutionMetadata.empty());

        assertEquals(5, p.read("instance-A").size(), "all 5 history events persisted");

        Set<Long> activityIds = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            FetchedWorkItem w = fetchWorkRequired(p, "activity " + (i + 1) + " of 3");
            activityIds.add(asActivity(w).id());
        }
        assertEquals(Set.of(1L, 2L, 3L), activityIds, "the three activities of the ack");
        assertNoWorkItem(p, "exactly 3 activities were enqueued");

        FetchedOrchestration next = fetchOrchRequired(p, "the two orchestrator messages of the ack");
        assertEquals("instance-A", next.item().instance());
        List<WorkItem> messages = next.item().messages();
        assertEquals(2, messages.size(), "TimerFired and ExternalRaised: " + messages);
        assertInstanceOf(WorkItem.TimerFired.class, messages.get(0), "first message");
        WorkItem.ExternalRaised raised = assertInstanceOf(WorkItem.ExternalRaised.class, messages.get(1),
                "second message");
        assertEquals("test-data", raised.data());
    }

    /** An ack with a wrong token fails and the real lock stays until it expires. */
    @Test
    void test_lock_released_only_on_successful_ack() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        fetchOrchRequired(p, lockTimeout(), "the start");
        long lockedAt = now();
        assertNoOrchItem(p, "the instance is locked");

        expectPermanentError("an ack with an invalid token", () -> ack(p, "invalid-lock-token", 1,
                List.of(startedEvent(2)), ExecutionMetadata.empty()));
        assertNoOrchItem(p, "the failed ack must not release the lock");
        assertEquals(0, p.read("instance-A").size(), "the failed ack must not write history");

        sleepUntilHalfLock(lockedAt);
        assertNoOrchItem(p, "the lock still holds half way through its timeout");

        sleepPastLockExpiry(lockedAt);
        FetchedOrchestration again = fetchOrchRequired(p, lockTimeout(), "the instance after its lock expired");
        assertEquals("instance-A", again.item().instance());
    }

    /** Two concurrent acks with the same token: exactly one commits. */
    @Test
    void test_concurrent_ack_prevention() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        String token = f.lockToken();

        List<Outcome<Boolean>> outcomes = runConcurrently(2, i -> () -> {
            ack(p, token, 1, List.of(startedEvent(1)), ExecutionMetadata.empty());
            return true;
        });

        long successes = outcomes.stream().filter(Outcome::ok).count();
        assertEquals(1, successes, "exactly one ack must succeed: " + outcomes);
        for (Outcome<Boolean> o : outcomes) {
            if (!o.ok()) {
                assertInstanceOf(ProviderException.class, o.error(), "the losing ack fails with a ProviderException");
            }
        }
        assertEquals(1, p.read("instance-A").size(), "the turn was committed once");
    }
}
