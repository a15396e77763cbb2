package io.pgdurable.metrics;

import com.zaxxer.hikari.metrics.MetricsTrackerFactory;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.pgdurable.longpoll.LongPollView;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.ProviderMetrics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * The meters of one provider. Counters and the success timers are registered when the provider opens (so a rate
 * starts from zero, not from the first event); the error timers on their first use; the gauges once the provider
 * runs. Every meter is found through an array index on the hot path: no lookup, no allocation per event.
 */
final class ProviderMeters implements ProviderMetrics.Observer {
    static final String SCHEMA_TAG = "schema";
    /** Latency buckets of the operation timers: a claim or ack takes about a millisecond on a healthy database. */
    private static final Duration[] BUCKETS = {Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5),
            Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50), Duration.ofMillis(100),
            Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofMillis(2500),
            Duration.ofSeconds(5), Duration.ofSeconds(10)};

    private static final Set<String> OWN_TIMER_TAGS = Set.of("operation", "queue", "outcome");
    private static final QueueKind[] QUEUES = QueueKind.values();
    private static final WakeSource[] SOURCES = WakeSource.values();
    private static final ProviderMetrics.Operation[] OPERATIONS = ProviderMetrics.Operation.values();
    private static final ProviderMetrics.Outcome[] OUTCOMES = ProviderMetrics.Outcome.values();

    private final MeterRegistry registry;
    private final Tags tags;
    /** The owned pool's meters, or null without them. */
    private final PoolMeters poolMeters;
    private final List<Meter> meters = new ArrayList<>();
    private final QueueDepths depths;

    private final Counter[][] wakes = new Counter[QUEUES.length][SOURCES.length];
    private final Counter[] uselessWakes = new Counter[QUEUES.length];
    private final Counter[] claimsSkipped = new Counter[QUEUES.length];
    private final Counter[] capacityRefusals = new Counter[QUEUES.length];
    private final Counter notifications;
    private final Counter announcedByAnnouncer;
    private final Counter announcedInline;
    private final Counter announcementsQueued;
    private final Counter announceFailures;
    private final Counter announcementsUnheard;
    private final Counter reconnects;
    private final Counter connectionsLost;
    private final Counter scansOk;
    private final Counter scansTimedOut;
    private final Counter probes;
    /** [operation][outcome]; error outcomes filled on first use (a benign race: the registry returns one meter). */
    private final Timer[][] timers = new Timer[OPERATIONS.length][OUTCOMES.length];

    private volatile PostgresProvider provider;

    ProviderMeters(MeterRegistry registry, Tags tags, Duration depthRefresh, boolean poolMetrics) {
        this.registry = registry;
        this.tags = tags;
        this.poolMeters = poolMetrics ? new PoolMeters(registry) : null;
        if (taken(registry, tags)) {
            throw new IllegalStateException("another provider already reports to this registry with the tags "
                    + tags + "; give each its own tag (PgDurableMetrics.withTags) or close the other first");
        }
        this.depths = new QueueDepths(depthRefresh, () -> provider);
        for (QueueKind q : QUEUES) {
            int i = q.ordinal();
            for (WakeSource s : SOURCES) {
                wakes[i][s.ordinal()] = counter("pgdurable.wakes", "Parked fetches woken, by what woke them",
                        Tags.of("queue", q.label(), "source", s.label()));
            }
            uselessWakes[i] = counter("pgdurable.wakes.useless", "Woken fetches whose claim found nothing",
                    Tags.of("queue", q.label()));
            claimsSkipped[i] = counter("pgdurable.claims.skipped", "Fetches that parked without a claim: nothing "
                    + "was announced since the same claim found nothing", Tags.of("queue", q.label()));
            capacityRefusals[i] = counter("pgdurable.capacity.refused", "Long-polled fetches refused because "
                    + "maxParkedWaiters fetches were parked", Tags.of("queue", q.label()));
        }
        notifications = counter("pgdurable.notifications.received", "Notifications the listener received",
                Tags.empty());
        announcedByAnnouncer = counter("pgdurable.announcements.sent", "Announcements sent to other processes",
                Tags.of("path", "announcer"));
        announcedInline = counter("pgdurable.announcements.sent", "Announcements sent to other processes",
                Tags.of("path", "inline"));
        announcementsQueued = counter("pgdurable.announcements.queued", "Announcements queued for the announcer "
                + "thread", Tags.empty());
        announcementsUnheard = counter("pgdurable.announcements.unheard", "Announcements not sent: no other process "
                + "listened", Tags.empty());
        announceFailures = counter("pgdurable.announcements.failed", "Notifying transactions that failed (each is "
                + "retried)", Tags.empty());
        reconnects = counter("pgdurable.listener.reconnects", "Times the listener was LISTENing again after a loss",
                Tags.empty());
        connectionsLost = counter("pgdurable.listener.lost", "Times the listener connection was found dead",
                Tags.empty());
        scansOk = counter("pgdurable.scans", "Timer scans", Tags.of("outcome", "ok"));
        scansTimedOut = counter("pgdurable.scans", "Timer scans", Tags.of("outcome", "timeout"));
        probes = counter("pgdurable.probes", "Fallback probes (while fetches wait)", Tags.empty());
        for (ProviderMetrics.Operation op : OPERATIONS) {
            timers[op.ordinal()][ProviderMetrics.Outcome.OK.ordinal()] = timer(op, ProviderMetrics.Outcome.OK);
        }
    }

    private Counter counter(String name, String description, Tags more) {
        Counter c = Counter.builder(name).description(description).tags(tags).tags(more).register(registry);
        synchronized (meters) {
            meters.add(c);
        }
        return c;
    }

    /**
     * True when a provider with exactly these tags reports here already: its meters and ours would be one, and the
     * first to close would remove both.
     */
    private static boolean taken(MeterRegistry registry, Tags tags) {
        List<Tag> wanted = new ArrayList<>();
        tags.forEach(wanted::add);
        for (Meter m : registry.find("pgdurable.operations").tags(tags).meters()) {
            List<Tag> own = new ArrayList<>();
            for (Tag t : m.getId().getTags()) {
                if (!OWN_TIMER_TAGS.contains(t.getKey())) {
                    own.add(t);
                }
            }
            if (own.size() == wanted.size() && own.containsAll(wanted)) {
                return true;
            }
        }
        return false;
    }

    private Timer timer(ProviderMetrics.Operation op, ProviderMetrics.Outcome outcome) {
        Timer t = Timer.builder("pgdurable.operations")
                .description("Database calls of the queue operations (each claim attempt of a fetch)")
                .tags(tags)
                .tags("operation", op.verb(), "queue", op.queue().label(), "outcome", outcome.label())
                .serviceLevelObjectives(BUCKETS)
                .register(registry);
        synchronized (meters) {
            meters.add(t);
        }
        return t;
    }

    private void gauge(String name, String description, Tags more, ToDoubleFunction<ProviderMeters> value) {
        gauge(name, description, null, more, value);
    }

    private void gauge(String name, String description, String baseUnit, Tags more,
                       ToDoubleFunction<ProviderMeters> value) {
        Gauge g = Gauge.builder(name, this, value).description(description).baseUnit(baseUnit).tags(tags).tags(more)
                .register(registry);
        synchronized (meters) {
            meters.add(g);
        }
    }

    @Override
    public MetricsTrackerFactory poolMetrics() {
        return poolMeters;
    }

    @Override
    public void started(PostgresProvider started) {
        this.provider = started;
        if (started.longPolling().isPresent()) {
            for (QueueKind q : QUEUES) {
                gauge("pgdurable.fetches.parked", "Fetches registered with long polling right now (parked or "
                        + "claiming)", Tags.of("queue", q.label()), m -> m.fromPoller(p -> p.parkedFetches(q)));
            }
            gauge("pgdurable.listener.up", "1 while the long-poll listener is connected and LISTENing", Tags.empty(),
                    m -> m.fromPoller(p -> p.isListening() ? 1 : 0));
            gauge("pgdurable.deadlines.tracked", "Future wake-up times tracked (delayed items, lease ends)",
                    Tags.empty(), m -> m.fromPoller(LongPollView::trackedDeadlines));
        }
        gauge("pgdurable.announcements.pending", "Announcements waiting for the announcer thread", Tags.empty(),
                m -> m.fromProvider(PostgresProvider::pendingAnnouncements));
        gauge("pgdurable.acks.pending", "Acks waiting for a batched flush (ackBatchSize above 1)", Tags.empty(),
                m -> m.fromProvider(PostgresProvider::pendingAcks));
        gauge("pgdurable.clock.offset", "This provider's clock minus the database server's at the last check "
                + "(positive: ahead)", "seconds", Tags.empty(), m -> m.fromProvider(ProviderMeters::offsetSeconds));
        gauge("pgdurable.queue.depth", "Items claimable now (read at most every few seconds)",
                Tags.of("queue", QueueKind.ORCHESTRATOR.label()), m -> m.depths.orchestrator());
        gauge("pgdurable.queue.depth", "Items claimable now (read at most every few seconds)",
                Tags.of("queue", QueueKind.WORKER.label()), m -> m.depths.worker());
    }

    /** NaN before the first check and with the check turned off, like any gauge without a value. */
    private static double offsetSeconds(PostgresProvider p) {
        return p.clockOffset().map(d -> d.toNanos() / 1e9).orElse(Double.NaN);
    }

    private double fromProvider(ToDoubleFunction<PostgresProvider> read) {
        PostgresProvider p = provider;
        return p == null ? Double.NaN : read.applyAsDouble(p);
    }

    private double fromPoller(ToDoubleFunction<LongPollView> read) {
        PostgresProvider p = provider;
        Optional<LongPollView> poller = p == null ? Optional.empty() : p.longPolling();
        return poller.isPresent() ? read.applyAsDouble(poller.get()) : Double.NaN;
    }

    @Override
    public void closed() {
        provider = null;
        synchronized (meters) {
            meters.forEach(registry::remove);
            meters.clear();
        }
    }

    // ------------------------------------------------------------------ events

    @Override
    public void operationEnded(ProviderMetrics.Operation operation, ProviderMetrics.Outcome outcome, long nanos) {
        Timer[] byOutcome = timers[operation.ordinal()];
        Timer t = byOutcome[outcome.ordinal()];
        if (t == null) {
            t = timer(operation, outcome);
            byOutcome[outcome.ordinal()] = t;
        }
        t.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void listening(boolean reconnect) {
        if (reconnect) {
            reconnects.increment();
        }
    }

    @Override
    public void connectionLost(Throwable cause) {
        connectionsLost.increment();
    }

    @Override
    public void notification(String payload) {
        notifications.increment();
    }

    @Override
    public void scanFinished(boolean timedOut) {
        (timedOut ? scansTimedOut : scansOk).increment();
    }

    @Override
    public void fallbackPoll() {
        probes.increment();
    }

    @Override
    public void waiterWoken(QueueKind queue, WakeSource source) {
        wakes[queue.ordinal()][source.ordinal()].increment();
    }

    @Override
    public void uselessWake(QueueKind queue) {
        uselessWakes[queue.ordinal()].increment();
    }

    @Override
    public void capacityRefused(QueueKind queue) {
        capacityRefusals[queue.ordinal()].increment();
    }

    @Override
    public void claimSkipped(String queue) {
        claimsSkipped[QueueKind.ORCHESTRATOR.label().equals(queue) ? QueueKind.ORCHESTRATOR.ordinal()
                : QueueKind.WORKER.ordinal()].increment();
    }

    @Override
    public void announced(int payloads) {
        announcedByAnnouncer.increment(payloads);
    }

    @Override
    public void announcedInline(int payloads) {
        announcedInline.increment(payloads);
    }

    @Override
    public void announcementsQueued(int hints) {
        announcementsQueued.increment(hints);
    }

    @Override
    public void announcementsUnheard(int payloads) {
        announcementsUnheard.increment(payloads);
    }

    @Override
    public void announceFailed(int payloads) {
        announceFailures.increment();
    }
}
