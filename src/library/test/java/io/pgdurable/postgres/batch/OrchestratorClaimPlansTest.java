package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.OffsetClock;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The orchestrator claim runs with generic plans, and its per-instance statements compare
 * {@code visible_at_ms + 0} so that a generic plan cannot read the visible-at index to claim one instance. A generic
 * plan is what every call gets from the first on, so these claims exercise exactly those comparisons.
 */
class OrchestratorClaimPlansTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private static final Duration LATER = Duration.ofSeconds(60);
    private final Hubs hubs = new Hubs("claimplan");
    private final OffsetClock clock = new OffsetClock(0);
    private String schema;

    @AfterEach
    void stop() {
        hubs.close();
    }

    private PostgresProvider provider() {
        schema = hubs.newSchema();
        return hubs.open(schema, b -> b.clock(clock));
    }

    @Test
    void both_claim_functions_run_with_generic_plans() {
        provider();
        List<String> configs = BatchDb.strings("SELECT p.proname || ' ' || array_to_string(p.proconfig, ',') "
                + "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '" + schema + "' "
                + "AND p.proname IN ('fetch_orchestration_item', 'claim_orchestration_instance') ORDER BY 1");
        assertEquals(List.of("claim_orchestration_instance plan_cache_mode=force_generic_plan",
                "fetch_orchestration_item plan_cache_mode=force_generic_plan"), configs);
    }

    @Test
    void a_claim_tags_only_its_instances_visible_messages_and_a_later_one_the_rest() {
        PostgresProvider p = provider();
        for (int i = 0; i < 8; i++) {
            String instance = "plan-" + i;
            p.enqueueForOrchestrator(new WorkItem.StartOrchestration(instance, "O", "{}", "1.0.0"), null);
            p.enqueueForOrchestrator(new WorkItem.ExternalRaised(instance, "later", "{}"), LATER);
        }
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            FetchedOrchestration f = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
            assertEquals(1, f.item().messages().size(), "only the visible start of " + f.item().instance());
            assertTrue(f.item().messages().get(0) instanceof WorkItem.StartOrchestration);
            assertEquals(0, BatchDb.count(schema, "orchestrator_queue WHERE instance_id = '" + f.item().instance()
                    + "' AND kind = 'ExternalRaised' AND lock_token IS NOT NULL"), "the delayed event stays untagged");
            tokens.add(f.lockToken());
        }
        assertEquals(Optional.empty(), p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).map(f -> f.item()
                .instance()), "every instance is locked and their events are not visible yet");
        tokens.forEach(t -> p.abandonOrchestrationItem(t, null, true));

        clock.advance(LATER.plusSeconds(1));
        FetchedOrchestration both = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(2, both.item().messages().size(), "the start and, now visible, the event");
        assertTrue(both.item().messages().get(0) instanceof WorkItem.StartOrchestration);
        assertTrue(both.item().messages().get(1) instanceof WorkItem.ExternalRaised);
    }

    @Test
    void orphan_queue_messages_that_are_visible_are_dropped_and_delayed_ones_kept() {
        PostgresProvider p = provider();
        p.enqueueForOrchestrator(new WorkItem.QueueMessage("never-started", "q", "now"), null);
        p.enqueueForOrchestrator(new WorkItem.QueueMessage("never-started", "q", "later"), LATER);

        assertEquals(Optional.empty(), p.fetchOrchestrationItem(LOCK, Duration.ZERO, null));
        assertEquals(List.of("later"), BatchDb.strings("SELECT work_item FROM " + q(schema)
                + ".orchestrator_queue WHERE instance_id = 'never-started'").stream()
                .map(json -> ((WorkItem.QueueMessage) WorkItem.fromJson(json)).data()).toList());
    }
}
