package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.ConformanceTestBase;
import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ShortPollingTests;
import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.postgres.LongPollTestFactory;
import io.pgdurable.postgres.PostgresTestFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;
import io.pgdurable.postgres.acks.AckViaTestFactory;
import io.pgdurable.postgres.batch.BatchedAckTestFactory;
import io.pgdurable.postgres.pgbouncer.PgBouncerTestFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The configurations of the PostgreSQL provider that the conformance modules run in. A mode is a factory and the
 * modules it runs; each module's binding ({@link ConformanceBinding}) runs once in every mode that lists the module,
 * in the order of the constants. Adding or removing a mode is one constant (and its factory); no binding changes.
 */
public enum ConformanceMode {
    /** Long polling off: a fetch with a poll timeout returns at once. */
    SHORT_POLL(PostgresTestFactory::new, Modules.SHORT_POLL_CONTRACT),
    /** Long polling on: every provider LISTENs and parks fetches. */
    LONG_POLL(LongPollTestFactory::new, Modules.LONG_POLL_CONTRACT),
    /**
     * Long polling on, every provider connected as a least-privilege runtime role with {@code VERIFY_ONLY}, on
     * schemas that an owner role migrated and activated (docs/roles.md).
     */
    RUNTIME_ROLE(RuntimeRoleTestFactory::new, Modules.LONG_POLL_CONTRACT),
    /** Every {@code ackWorkItem} of the tests sent as {@code ackWorkItems} with a list of one. */
    ACK_LIST(() -> new AckViaTestFactory(AckViaTestFactory.Via.ACK_LIST), Modules.WORKER_ACKS),
    /** Every {@code ackWorkItem} of the tests sent as {@code ackWorkItemAndFetchNext}. */
    ACK_AND_FETCH_NEXT(() -> new AckViaTestFactory(AckViaTestFactory.Via.ACK_AND_FETCH_NEXT), Modules.WORKER_ACKS),
    /** Terminal worker acks batched, 16 per flush. */
    BATCHED_ACK(BatchedAckTestFactory::new, Modules.BATCHED_ACKS),
    /**
     * Long polling on, each provider's pool through a real PgBouncer in transaction mode, migrations and the
     * listener direct. Never skipped: without a PgBouncer its tests fail, naming what to install (PgBouncer).
     */
    PGBOUNCER_LONG_POLL(() -> new PgBouncerTestFactory(true), Modules.LONG_POLL_CONTRACT),
    /** The same with long polling off, for the short-polling module (the long-poll mode covers the others). */
    PGBOUNCER_SHORT_POLL(() -> new PgBouncerTestFactory(false), List.of(ShortPollingTests.class));

    /**
     * JUnit configuration parameter (or system property) naming the modes to run, comma-separated (for example
     * {@code LONG_POLL}); unset, every mode runs. The PostgreSQL major matrix sets it to the long-poll mode.
     */
    public static final String SELECTION = "pgdurable.test.conformanceModes";

    private final Supplier<ProviderFactory> factory;
    private final List<Class<? extends ConformanceTestBase>> modules;

    ConformanceMode(Supplier<ProviderFactory> factory, List<Class<? extends ConformanceTestBase>> modules) {
        this.factory = factory;
        this.modules = modules;
    }

    /** A fresh factory of this mode, for one test. */
    public ProviderFactory newFactory() {
        return factory.get();
    }

    /** The modes that run {@code module}, in declaration order. */
    static List<ConformanceMode> running(Class<?> module) {
        List<ConformanceMode> modes = new ArrayList<>();
        for (ConformanceMode m : values()) {
            if (m.modules.contains(module)) {
                modes.add(m);
            }
        }
        return modes;
    }

    /** The modes a {@link #SELECTION} value names; an unknown name fails, listing the known ones. */
    static Set<ConformanceMode> selected(String selection) {
        Set<ConformanceMode> modes = EnumSet.noneOf(ConformanceMode.class);
        for (String name : selection.split(",")) {
            String trimmed = name.trim().toUpperCase(Locale.ROOT);
            if (trimmed.isEmpty()) {
                continue;
            }
            try {
                modes.add(valueOf(trimmed));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(SELECTION + " names '" + name.trim() + "', which is no mode; the "
                        + "modes are " + Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", ")), e);
            }
        }
        if (modes.isEmpty()) {
            throw new IllegalArgumentException(SELECTION + " is set but names no mode: '" + selection + "'");
        }
        return modes;
    }

    /** The module lists the modes share. */
    private static final class Modules {
        /** Every module of the kit except the two polling ones, which depend on whether fetches park. */
        static final List<Class<? extends ConformanceTestBase>> CONTRACT = List.of(
                AtomicityTests.class, BulkDeletionTests.class, CancellationTests.class,
                CapabilityFilteringTests.class, CustomStatusTests.class, DeletionTests.class,
                ErrorHandlingTests.class, InstanceCreationTests.class, InstanceLockingTests.class, KvStoreTests.class,
                LockExpirationTests.class, ManagementTests.class, MultiExecutionTests.class, PoisonMessageTests.class,
                PruneTests.class, QueueSemanticsTests.class, SessionsTests.class, TagFilteringTests.class);
        static final List<Class<? extends ConformanceTestBase>> SHORT_POLL_CONTRACT =
                with(CONTRACT, ShortPollingTests.class);
        static final List<Class<? extends ConformanceTestBase>> LONG_POLL_CONTRACT =
                with(CONTRACT, LongPollingTests.class);
        /** The worker-queue modules whose tests ack work items: what the alternative ack operations must keep. */
        static final List<Class<? extends ConformanceTestBase>> WORKER_ACKS = List.of(
                QueueSemanticsTests.class, LockExpirationTests.class, CancellationTests.class,
                PoisonMessageTests.class, SessionsTests.class, TagFilteringTests.class);
        /** The worker-queue modules that batched acks run through (docs/batching.md). */
        static final List<Class<? extends ConformanceTestBase>> BATCHED_ACKS = List.of(
                QueueSemanticsTests.class, LockExpirationTests.class, CancellationTests.class,
                PoisonMessageTests.class, SessionsTests.class);

        private static List<Class<? extends ConformanceTestBase>> with(
                List<Class<? extends ConformanceTestBase>> modules, Class<? extends ConformanceTestBase> module) {
            List<Class<? extends ConformanceTestBase>> all = new ArrayList<>(modules);
            all.add(module);
            return List.copyOf(all);
        }
    }
}
