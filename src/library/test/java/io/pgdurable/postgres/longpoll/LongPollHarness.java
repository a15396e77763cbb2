package io.pgdurable.postgres.longpoll;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.ProviderInternals;
import io.pgdurable.postgres.SchemaPool;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.DispatcherCapabilityFilter;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * A long-polling provider on a schema of its own, started and ready: LISTEN is active and the catch-up scan that
 * follows it has finished, so the timed part of a test starts from a quiet machine. Closing it closes the provider
 * and drops the schema (or hands it, emptied, to the next test: SchemaPool).
 */
final class LongPollHarness implements AutoCloseable {
    static final Duration LONG_LOCK = Duration.ofSeconds(60);
    static final String ORCH = "LpOrch";
    static final String VERSION = "1.0.0";

    final String schema;
    final SignalRecorder signals = new SignalRecorder();
    final PostgresProvider provider;
    private final String kind;
    private final boolean pooled;

    /** {@code mayReuse}: the caller only needs a schema of its own, so an emptied one may stand in (SchemaPool). */
    private LongPollHarness(String schema, UnaryOperator<PostgresProviderConfig.Builder> customize, boolean mayReuse) {
        this.kind = SchemaPool.kindOf(build(schema, customize));
        String reused = mayReuse ? SchemaPool.take(kind) : null;
        this.schema = reused != null ? reused : schema;
        this.pooled = mayReuse;
        PostgresProvider p;
        try {
            p = PostgresProvider.create(build(this.schema, customize));
        } catch (RuntimeException | Error e) {
            TestDatabase.dropSchema(this.schema);
            throw e;
        }
        if (mayReuse && reused == null) {
            SchemaPool.noteFresh(kind, this.schema);
        }
        this.provider = p;
        try {
            signals.awaitListening(Duration.ofSeconds(15));
            signals.await(() -> signals.scansFinished() > 0, Duration.ofSeconds(10), "the catch-up scan after LISTEN");
            assertTrue(poller().isListening(), "listening");
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    static LongPollHarness open(String prefix) {
        return open(prefix, b -> b);
    }

    static LongPollHarness open(String prefix, UnaryOperator<PostgresProviderConfig.Builder> customize) {
        return new LongPollHarness(TestDatabase.newSchemaName(prefix), customize, true);
    }

    /** A harness on an existing {@code schema} (dropped when the harness closes). */
    static LongPollHarness onSchema(String schema, UnaryOperator<PostgresProviderConfig.Builder> customize) {
        return new LongPollHarness(schema, customize, false);
    }

    private PostgresProviderConfig build(String schemaName, UnaryOperator<PostgresProviderConfig.Builder> customize) {
        return customize.apply(TestDatabase.config(schemaName).longPolling(true).longPollSignals(signals)).build();
    }

    LongPoller poller() {
        return ProviderInternals.longPoller(provider);
    }

    String channel() {
        return NotifyChannel.forSchema(schema);
    }

    @Override
    public void close() {
        try {
            provider.close();
        } finally {
            if (pooled) {
                SchemaPool.release(kind, schema);
            } else {
                TestDatabase.dropSchema(schema);
            }
        }
    }

    // ------------------------------------------------------------------ items

    static WorkItem.ActivityExecute activity(String instance, long id) {
        return new WorkItem.ActivityExecute(instance, 1, id, "LpActivity", "{}");
    }

    static WorkItem.ActivityExecute activity(String instance, long id, String session, String tag) {
        return new WorkItem.ActivityExecute(instance, 1, id, "LpActivity", "{}", session, tag);
    }

    static WorkItem.StartOrchestration start(String instance) {
        return new WorkItem.StartOrchestration(instance, ORCH, "{}", VERSION);
    }

    static WorkItem.ExternalRaised event(String instance, String name) {
        return new WorkItem.ExternalRaised(instance, name, "{}");
    }

    // ------------------------------------------------------------------ operations

    BackgroundFetch<FetchedWorkItem> parkWorker(String name, Duration pollTimeout, SessionFetchConfig session,
                                                TagFilter filter) {
        return BackgroundFetch.start(name, () -> provider.fetchWorkItem(LONG_LOCK, pollTimeout, session, filter))
                .awaitParked(Duration.ofSeconds(5));
    }

    BackgroundFetch<FetchedWorkItem> parkWorker(String name, Duration pollTimeout) {
        return parkWorker(name, pollTimeout, null, TagFilter.any());
    }

    BackgroundFetch<FetchedOrchestration> parkOrchestrator(String name, Duration pollTimeout) {
        return parkOrchestrator(name, pollTimeout, null);
    }

    BackgroundFetch<FetchedOrchestration> parkOrchestrator(String name, Duration pollTimeout,
                                                           DispatcherCapabilityFilter filter) {
        return BackgroundFetch.start(name, () -> provider.fetchOrchestrationItem(LONG_LOCK, pollTimeout, filter))
                .awaitParked(Duration.ofSeconds(5));
    }

    /** Creates {@code instance} (a first turn that records it), so later messages for it are claimable. */
    void startInstance(String instance) {
        provider.enqueueForOrchestrator(start(instance), null);
        Optional<FetchedOrchestration> f = provider.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null);
        assertTrue(f.isPresent() && f.get().item().instance().equals(instance), "first turn of " + instance + ": " + f);
        ackTurn(f.get());
    }

    void ackTurn(FetchedOrchestration f) {
        provider.ackOrchestrationItem(f.lockToken(), f.item().executionId(), List.of(), List.of(), List.of(),
                ExecutionMetadata.of(ORCH, VERSION), List.of());
    }

    /** One full round trip on each queue: the pool, the statements and the JIT are warm afterwards. */
    void warmUp() {
        for (int i = 0; i < 3; i++) {
            provider.enqueueForWorker(activity("warm", i));
            FetchedWorkItem w = provider.fetchWorkItem(LONG_LOCK, Duration.ofSeconds(1), null, TagFilter.any())
                    .orElseThrow(() -> new AssertionError("warm-up work item"));
            provider.ackWorkItem(w.lockToken(), null);
            provider.enqueueForOrchestrator(start("warm-" + i), null);
            FetchedOrchestration o = provider.fetchOrchestrationItem(LONG_LOCK, Duration.ofSeconds(1), null)
                    .orElseThrow(() -> new AssertionError("warm-up orchestration"));
            ackTurn(o);
        }
    }
}
