package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.CustomStatus;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code custom_status} (CONTRACT §7.17, §2.3 step 8, §2.15, §4.7): the last
 * {@code CustomStatusUpdated} event of an ack sets (or clears) the instance's custom status and bumps its version by
 * one; {@code getCustomStatus} only answers when the version is above the caller's last seen version.
 */
public abstract class CustomStatusTests extends ConformanceTestBase {

    /** Pokes the instance, fetches the turn and acks {@code delta} under execution 1 with empty metadata. */
    protected static void ackTurn(OrchestrationProvider p, String instance, List<Event> delta) {
        p.enqueueForOrchestrator(poke(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the poke of " + instance);
        assertEquals(instance, f.item().instance(), "fetched another instance");
        ack(p, f.lockToken(), 1, delta, ExecutionMetadata.empty());
    }

    /** getCustomStatus(instance, lastSeen), which must return an Optional. */
    protected static Optional<CustomStatus> customStatus(OrchestrationProvider p, String instance, long lastSeen) {
        Optional<CustomStatus> r = p.getCustomStatus(instance, lastSeen);
        assertNotNull(r, "getCustomStatus returned null instead of an Optional");
        return r;
    }

    /** getCustomStatus(instance, 0), which must be present. */
    protected static CustomStatus requiredStatus(OrchestrationProvider p, String instance) {
        Optional<CustomStatus> r = customStatus(p, instance, 0);
        assertTrue(r.isPresent(), "expected a custom status for " + instance);
        return r.get();
    }

    /** A set status is returned with version 1. */
    @Test
    void test_custom_status_set() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "cs-set");
        ackTurn(p, "cs-set", List.of(Events.customStatusUpdated(100, "progress")));

        CustomStatus status = requiredStatus(p, "cs-set");
        assertEquals(Optional.of("progress"), status.value());
        assertEquals(1, status.version(), "the first update is version 1");
    }

    /** Clearing after a set gives a null status at version 2. */
    @Test
    void test_custom_status_clear() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "cs-clear");
        ackTurn(p, "cs-clear", List.of(Events.customStatusUpdated(100, "temp")));
        assertEquals(Optional.of("temp"), requiredStatus(p, "cs-clear").value(), "status after the set");

        ackTurn(p, "cs-clear", List.of(Events.customStatusUpdated(101, null)));
        CustomStatus status = requiredStatus(p, "cs-clear");
        assertEquals(Optional.empty(), status.value(), "the status is null after a clear");
        assertEquals(2, status.version(), "set + clear = version 2");
    }

    /** An ack without a CustomStatusUpdated event leaves the status and its version alone. */
    @Test
    void test_custom_status_none_preserves() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "cs-noop");
        ackTurn(p, "cs-noop", List.of(Events.customStatusUpdated(100, "keep-me")));
        ackTurn(p, "cs-noop", List.of());

        CustomStatus status = requiredStatus(p, "cs-noop");
        assertEquals(Optional.of("keep-me"), status.value(), "an ack without an update keeps the value");
        assertEquals(1, status.version(), "an ack without an update keeps the version");
    }

    /** Set, set, clear: versions 1, 2, 3 and a null status at the end. */
    @Test
    void test_custom_status_version_increments() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "cs-ver");

        ackTurn(p, "cs-ver", List.of(Events.customStatusUpdated(100, "a")));
        assertEquals(new CustomStatus("a", 1), requiredStatus(p, "cs-ver"));

        ackTurn(p, "cs-ver", List.of(Events.customStatusUpdated(101, "b")));
        assertEquals(new CustomStatus("b", 2), requiredStatus(p, "cs-ver"));

        ackTurn(p, "cs-ver", List.of(Events.customStatusUpdated(102, null)));
        CustomStatus last = requiredStatus(p, "cs-ver");
        assertEquals(3, last.version());
        assertEquals(Optional.empty(), last.value(), "the last update cleared the status");
    }

    /** Polling with the current version gives nothing; polling with 0 gives the status. */
    @Test
    void test_custom_status_polling_no_change() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "cs-poll");
        ackTurn(p, "cs-poll", List.of(Events.customStatusUpdated(100, "v1")));

        Optional<CustomStatus> unchanged = customStatus(p, "cs-poll", 1);
        assertTrue(unchanged.isEmpty(), "no change since version 1, got " + unchanged);

        Optional<CustomStatus> fromZero = customStatus(p, "cs-poll", 0);
        assertEquals(Optional.of(new CustomStatus("v1", 1)), fromZero, "version 1 is above 0");
    }

    /** An unknown instance has no custom status (and no error). */
    @Test
    void test_custom_status_nonexistent_instance() {
        OrchestrationProvider p = newProvider();
        Optional<CustomStatus> r = customStatus(p, "does-not-exist", 0);
        assertTrue(r.isEmpty(), "unknown instance, got " + r);
    }

    /** A fresh instance is at version 0, so polling with 0 gives nothing. */
    @Test
    void test_custom_status_default_on_new_instance() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "cs-default");
        Optional<CustomStatus> r = customStatus(p, "cs-default", 0);
        assertTrue(r.isEmpty(), "a new instance has version 0, which is not above 0; got " + r);
    }
}
