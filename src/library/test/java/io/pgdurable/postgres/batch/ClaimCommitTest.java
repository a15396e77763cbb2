package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.activity;
import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Which transactions wait for their WAL flush: the three claims commit asynchronously and everything that records
 * work (enqueues, acks, turn acks) synchronously. Observed from inside each transaction by a test trigger that
 * records the transaction's {@code synchronous_commit} setting.
 */
class ClaimCommitTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private final Hubs hubs = new Hubs("claimc");
    private String schema;

    @AfterEach
    void stop() {
        hubs.close();
    }

    private PostgresProvider provider(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        schema = hubs.newSchema();
        PostgresProvider p = hubs.open(schema, tune);
        String s = q(schema);
        BatchDb.execute("CREATE TABLE " + s + ".commit_modes (n BIGSERIAL, what TEXT, mode TEXT)");
        BatchDb.execute("CREATE FUNCTION " + s + ".record_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                + "INSERT INTO " + s + ".commit_modes (what, mode) SELECT TG_TABLE_NAME || ' ' || TG_OP, "
                + "CASE WHEN source = 'session' THEN setting ELSE 'default' END FROM pg_settings "
                + "WHERE name = 'synchronous_commit'; RETURN NULL; END $$");
        for (String table : new String[] {"worker_queue", "orchestrator_queue"}) {
            BatchDb.execute("CREATE TRIGGER record_commit_mode AFTER INSERT OR UPDATE OR DELETE ON " + s + "." + table
                    + " FOR EACH STATEMENT EXECUTE FUNCTION " + s + ".record_commit_mode()");
        }
        return p;
    }

    /**
     * The modes recorded since the last call, as "table OP mode": "off" when the transaction set
     * {@code synchronous_commit} off itself, "default" when it kept the server's setting (on for the machine's
     * PostgreSQL, off for the embedded test server, which is why the source is what is recorded).
     */
    private List<String> modes() {
        List<String> out = BatchDb.strings("SELECT what || ' ' || mode FROM " + q(schema) + ".commit_modes ORDER BY n");
        BatchDb.execute("DELETE FROM " + q(schema) + ".commit_modes");
        return out;
    }

    @Test
    void claims_commit_without_a_flush_wait_and_everything_else_with_one() {
        PostgresProvider p = provider(b -> b);
        p.enqueueForWorker(activity(1));
        p.enqueueAllForWorker(List.of(activity(2), activity(3)));
        assertEquals(List.of("worker_queue INSERT default", "worker_queue INSERT default"), modes(), "enqueues wait");
        FetchedWorkItem one = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
        assertEquals(List.of("worker_queue UPDATE off"), modes(), "a claim does not");
        List<FetchedWorkItem> two = p.fetchWorkItems(LOCK, WorkBatch.upTo(2), null, TagFilter.defaultOnly());
        assertEquals(List.of("worker_queue UPDATE off"), modes(), "a batched claim does not");
        p.ackWorkItem(one.lockToken(), new WorkItem.ActivityCompleted("inst", 1, 1, "\"r\""));
        assertEquals(List.of("worker_queue DELETE default", "orchestrator_queue INSERT default"), modes(),
                "an ack waits");
        p.enqueueForWorker(activity(4));
        modes();
        p.ackWorkItemAndFetchNext(two.get(0).lockToken(), null, LOCK, null, TagFilter.defaultOnly()).orElseThrow();
        assertEquals(List.of("worker_queue DELETE default", "worker_queue UPDATE default"), modes(),
                "an ack that also claims waits (it records work)");

        p.enqueueForOrchestrator(new WorkItem.StartOrchestration("o1", "Orch", "{}", "1.0.0"), null);
        assertEquals(List.of("orchestrator_queue INSERT default"), modes());
        FetchedOrchestration turn = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(List.of("orchestrator_queue UPDATE off"), modes(), "an orchestration claim does not wait");
        p.ackOrchestrationItem(turn.lockToken(), 1, List.of(), List.of(activity(9)), List.of(),
                new ExecutionMetadata("Running", null, "Orch", "1.0.0", null, null), List.of());
        List<String> ack = modes();
        assertEquals(List.of(), ack.stream().filter(m -> !m.endsWith(" default")).toList(),
                "a turn ack waits: " + ack);
    }
}
