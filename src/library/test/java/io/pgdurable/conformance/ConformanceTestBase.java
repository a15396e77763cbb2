package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.opentest4j.AssertionFailedError;

/**
 * Shared fixture and helpers of the conformance kit. Every module is an abstract subclass; a provider binds a module
 * by extending it and returning its {@link ProviderFactory} from {@link #newFactory()}.
 *
 * <p>Lifecycle: each test gets a fresh factory (created before, closed after the test); closing the factory closes
 * the providers it made and drops their storage.
 *
 * <p>Conventions: every fetch passes {@link Duration#ZERO} as poll timeout (only the polling modules differ); tests
 * that wait out a lock wait {@link ProviderFactory#lockTimeout()} plus {@link #EXPIRY_MARGIN}, measured from the moment
 * the locking call returned, and also check that the lock still holds half way through.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class ConformanceTestBase {

    /** Lock duration for tests that never wait for expiry. */
    protected static final Duration LONG_LOCK = Duration.ofSeconds(30);
    /** Slack added to a lock timeout or delay before the test expects it to have passed. */
    protected static final Duration EXPIRY_MARGIN = Duration.ofMillis(150);
    /** Upper bound for a group of concurrent calls; exceeding it fails the test. */
    protected static final Duration CONCURRENCY_TIMEOUT = Duration.ofSeconds(30);

    protected static final String TEST_ORCH = "TestOrch";
    protected static final String TEST_VERSION = "1.0.0";

    /** The factory of the running test. */
    protected ProviderFactory factory;

    /** The provider implementation under test supplies a fresh factory for each test. */
    protected abstract ProviderFactory newFactory();

    @BeforeEach
    void openFactory() {
        factory = newFactory();
        assertNotNull(factory, "newFactory() returned null");
    }

    @AfterEach
    void closeFactory() {
        if (factory != null) {
            try {
                factory.close();
            } finally {
                factory = null;
            }
        }
    }

    // ------------------------------------------------------------------ providers and timing

    /** A fresh provider on its own empty storage. */
    protected OrchestrationProvider newProvider() {
        OrchestrationProvider p = factory.createProvider();
        assertNotNull(p, "createProvider() returned null");
        return p;
    }

    /** A second node on the storage of the most recent {@link #newProvider()}. */
    protected OrchestrationProvider peerProvider() {
        OrchestrationProvider p = factory.createPeerProvider();
        assertNotNull(p, "createPeerProvider() returned null");
        return p;
    }

    protected Duration lockTimeout() {
        Duration t = factory.lockTimeout();
        assertTrue(t != null && !t.isNegative() && !t.isZero(), "factory.lockTimeout() must be positive");
        return t;
    }

    protected static long now() {
        return System.nanoTime();
    }

    /** Sleeps until {@code offset} has passed since {@code startNanos} (a {@link #now()} reading). */
    protected static void sleepUntil(long startNanos, Duration offset) throws InterruptedException {
        long deadline = startNanos + offset.toNanos();
        long remaining;
        while ((remaining = deadline - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.sleep(remaining);
        }
    }

    /** Sleeps until half of the lock timeout has passed since {@code lockedAt}: the lock must still hold then. */
    protected void sleepUntilHalfLock(long lockedAt) throws InterruptedException {
        sleepUntil(lockedAt, lockTimeout().dividedBy(2));
    }

    /**
     * Sleeps until a lock taken with {@link #lockTimeout()} by a call that returned at {@code lockedAt} has
     * certainly expired.
     */
    protected void sleepPastLockExpiry(long lockedAt) throws InterruptedException {
        sleepUntil(lockedAt, lockTimeout().plus(EXPIRY_MARGIN));
    }

    // ------------------------------------------------------------------ items and events

    /** StartOrchestration of "TestOrch" 1.0.0 with input "{}" for execution 1. */
    protected static WorkItem.StartOrchestration startItem(String instance) {
        return startItem(instance, 1);
    }

    protected static WorkItem.StartOrchestration startItem(String instance, long executionId) {
        return new WorkItem.StartOrchestration(instance, TEST_ORCH, "{}", TEST_VERSION, null, null, executionId);
    }

    /** OrchestrationStarted of "TestOrch" 1.0.0 with input "{}". */
    protected static Event startedEvent(long eventId) {
        return Events.orchestrationStarted(eventId, TEST_ORCH, TEST_VERSION, "{}");
    }

    /** Metadata that creates the instance row as "TestOrch" 1.0.0. */
    protected static ExecutionMetadata testOrchMetadata() {
        return ExecutionMetadata.of(TEST_ORCH, TEST_VERSION);
    }

    protected static WorkItem.ActivityExecute activity(String instance, long id, String name, String input) {
        return new WorkItem.ActivityExecute(instance, 1, id, name, input);
    }

    protected static WorkItem.ActivityCompleted activityCompleted(String instance, long id, String result) {
        return new WorkItem.ActivityCompleted(instance, 1, id, result);
    }

    protected static WorkItem.ExternalRaised poke(String instance) {
        return new WorkItem.ExternalRaised(instance, "poke", "{}");
    }

    /** A field of an event's JSON object. */
    protected static Object eventField(Event event, String field) {
        return Json.parseObject(event.data()).get(field);
    }

    // ------------------------------------------------------------------ orchestrator queue

    protected static Optional<FetchedOrchestration> fetchOrch(OrchestrationProvider p, Duration lock) {
        Optional<FetchedOrchestration> r = p.fetchOrchestrationItem(lock, Duration.ZERO, null);
        assertNotNull(r, "fetchOrchestrationItem returned null instead of an Optional");
        return r;
    }

    protected static Optional<FetchedOrchestration> fetchOrch(OrchestrationProvider p) {
        return fetchOrch(p, LONG_LOCK);
    }

    protected static FetchedOrchestration fetchOrchRequired(OrchestrationProvider p, Duration lock, String why) {
        Optional<FetchedOrchestration> r = fetchOrch(p, lock);
        assertTrue(r.isPresent(), "expected an orchestration item: " + why);
        FetchedOrchestration f = r.get();
        assertNotNull(f.item(), "fetched orchestration has no item");
        assertNotNull(f.lockToken(), "fetched orchestration has no lock token");
        return f;
    }

    protected static FetchedOrchestration fetchOrchRequired(OrchestrationProvider p, String why) {
        return fetchOrchRequired(p, LONG_LOCK, why);
    }

    protected static void assertNoOrchItem(OrchestrationProvider p, String why) {
        Optional<FetchedOrchestration> r = fetchOrch(p, LONG_LOCK);
        r.ifPresent(f -> fail("expected no orchestration item (" + why + ") but fetched instance '"
                + f.item().instance() + "' with " + f.item().messages()));
    }

    protected static void ack(OrchestrationProvider p, String token, long executionId, List<Event> delta,
                              List<WorkItem> workerItems, List<WorkItem> orchestratorItems,
                              ExecutionMetadata metadata) {
        p.ackOrchestrationItem(token, executionId, delta, workerItems, orchestratorItems, metadata, List.of());
    }

    protected static void ack(OrchestrationProvider p, String token, long executionId, List<Event> delta,
                              ExecutionMetadata metadata) {
        ack(p, token, executionId, delta, List.of(), List.of(), metadata);
    }

    /** Acks a turn that changes nothing but consumes its messages. */
    protected static void ackEmpty(OrchestrationProvider p, String token, long executionId) {
        ack(p, token, executionId, List.of(), ExecutionMetadata.empty());
    }

    /**
     * The shared "create instance" step: enqueue a start, fetch it (30 s lock, no wait) and ack it with
     * OrchestrationStarted (event 1) and metadata "TestOrch" / "1.0.0".
     */
    protected static void createInstance(OrchestrationProvider p, String instance) {
        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "start of " + instance);
        assertEquals(instance, f.item().instance(), "createInstance fetched another instance");
        ack(p, f.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());
    }

    /** Activity-completion ids of a batch, in batch order. */
    protected static List<Long> completionIds(List<WorkItem> messages) {
        List<Long> ids = new ArrayList<>();
        for (WorkItem m : messages) {
            if (m instanceof WorkItem.ActivityCompleted c) {
                ids.add(c.id());
            }
        }
        return ids;
    }

    // ------------------------------------------------------------------ worker queue

    protected static Optional<FetchedWorkItem> fetchWork(OrchestrationProvider p, Duration lock) {
        Optional<FetchedWorkItem> r = p.fetchWorkItem(lock, Duration.ZERO, null, TagFilter.defaultOnly());
        assertNotNull(r, "fetchWorkItem returned null instead of an Optional");
        return r;
    }

    protected static Optional<FetchedWorkItem> fetchWork(OrchestrationProvider p) {
        return fetchWork(p, LONG_LOCK);
    }

    protected static FetchedWorkItem fetchWorkRequired(OrchestrationProvider p, Duration lock, String why) {
        Optional<FetchedWorkItem> r = fetchWork(p, lock);
        assertTrue(r.isPresent(), "expected a work item: " + why);
        FetchedWorkItem f = r.get();
        assertNotNull(f.item(), "fetched work item has no item");
        assertNotNull(f.lockToken(), "fetched work item has no lock token");
        return f;
    }

    protected static FetchedWorkItem fetchWorkRequired(OrchestrationProvider p, String why) {
        return fetchWorkRequired(p, LONG_LOCK, why);
    }

    protected static void assertNoWorkItem(OrchestrationProvider p, String why) {
        Optional<FetchedWorkItem> r = fetchWork(p, LONG_LOCK);
        r.ifPresent(f -> fail("expected no work item (" + why + ") but fetched " + f.item()));
    }

    /** The fetched item as an ActivityExecute (fails otherwise). */
    protected static WorkItem.ActivityExecute asActivity(FetchedWorkItem f) {
        return assertInstanceOf(WorkItem.ActivityExecute.class, f.item(), "worker queue returned a non-activity");
    }

    // ------------------------------------------------------------------ errors

    /** Runs {@code call}, which must fail with a {@link ProviderException}; returns it. */
    protected static ProviderException expectProviderError(String what, Executable call) {
        return assertThrows(ProviderException.class, call, what + " should fail with a ProviderException");
    }

    /** Like {@link #expectProviderError} and the error must be permanent (not retryable). */
    protected static ProviderException expectPermanentError(String what, Executable call) {
        ProviderException e = expectProviderError(what, call);
        assertFalse(e.retryable(), what + " should fail permanently (retryable=false), got: " + e);
        return e;
    }

    // ------------------------------------------------------------------ concurrency

    /** The result of one concurrent task: a value or the exception it ended with. */
    protected record Outcome<T>(T value, Throwable error) {
        public boolean ok() {
            return error == null;
        }

        /** The value; rethrows the task's failure as an assertion error. */
        public T get() {
            if (error != null) {
                throw new AssertionFailedError("concurrent task failed: " + error, error);
            }
            return value;
        }
    }

    /**
     * Runs {@code threads} tasks on their own threads, released together by a barrier, and waits for all of them
     * for at most {@link #CONCURRENCY_TIMEOUT} (the test fails if they do not finish in time).
     */
    protected static <T> List<Outcome<T>> runConcurrently(int threads, IntFunction<Callable<T>> tasks)
            throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<T>> futures = new ArrayList<>();
        try {
            for (int i = 0; i < threads; i++) {
                Callable<T> task = tasks.apply(i);
                futures.add(pool.submit(() -> {
                    start.await(CONCURRENCY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                    return task.call();
                }));
            }
        } finally {
            pool.shutdown();
        }
        if (!pool.awaitTermination(CONCURRENCY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            pool.shutdownNow();
            fail(threads + " concurrent provider calls did not finish within " + CONCURRENCY_TIMEOUT);
        }
        List<Outcome<T>> outcomes = new ArrayList<>();
        for (Future<T> f : futures) {
            try {
                outcomes.add(new Outcome<>(f.get(), null));
            } catch (ExecutionException e) {
                outcomes.add(new Outcome<>(null, e.getCause()));
            }
        }
        return outcomes;
    }
}
