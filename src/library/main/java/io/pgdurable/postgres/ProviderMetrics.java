package io.pgdurable.postgres;

import com.zaxxer.hikari.metrics.MetricsTrackerFactory;
import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;

/**
 * Where a provider reports what an operator watches: set with {@link PostgresProviderConfig.Builder#metrics}, asked
 * once per provider for an {@link Observer}. The Micrometer binding is {@code io.pgdurable.metrics.PgDurableMetrics};
 * this interface names no metrics library, so the provider runs with none on the class path.
 *
 * <p>One factory may serve many providers (a configuration derived with {@code toBuilder()} shares it): each
 * provider gets an observer of its own, told its schema.
 */
@FunctionalInterface
public interface ProviderMetrics {
    /** Observes nothing; the provider then skips every measurement (no clock read, no call). */
    ProviderMetrics NONE = schema -> Observer.NONE;

    /** The observer of one provider on {@code schema}, asked before the provider opens its pool. */
    Observer open(String schema);

    /**
     * One provider's observer: the long-poll moments (see {@link LongPollSignals}), the duration and outcome of each
     * database call of the queue operations, and its gauges once the provider runs. Every method is called on the
     * thread doing the work and must return quickly and never throw.
     */
    interface Observer extends LongPollSignals {
        Observer NONE = new Observer() {};

        /** Metrics for the pool the provider owns (not for a DataSource you passed), or null for none. */
        default MetricsTrackerFactory poolMetrics() {
            return null;
        }

        /** The provider is ready: read its gauges from it from now on, until {@link #closed()}. */
        default void started(PostgresProvider provider) {}

        /**
         * One database call of a queue operation ended after {@code nanos}: each claim attempt of a fetch (a
         * long-polled fetch's parking is not in it), each ack, enqueue (chunk), renewal and abandon.
         */
        default void operationEnded(Operation operation, Outcome outcome, long nanos) {}

        /** The provider closed: stop reading from it (and forget what it registered). */
        default void closed() {}
    }

    /** The timed queue operations: a verb on a queue. */
    enum Operation {
        FETCH_ORCHESTRATION("fetch", QueueKind.ORCHESTRATOR),
        ACK_ORCHESTRATION("ack", QueueKind.ORCHESTRATOR),
        ENQUEUE_ORCHESTRATION("enqueue", QueueKind.ORCHESTRATOR),
        RENEW_ORCHESTRATION("renew", QueueKind.ORCHESTRATOR),
        ABANDON_ORCHESTRATION("abandon", QueueKind.ORCHESTRATOR),
        FETCH_WORK("fetch", QueueKind.WORKER),
        ACK_WORK("ack", QueueKind.WORKER),
        ENQUEUE_WORK("enqueue", QueueKind.WORKER),
        RENEW_WORK("renew", QueueKind.WORKER),
        ABANDON_WORK("abandon", QueueKind.WORKER);

        private final String verb;
        private final QueueKind queue;

        Operation(String verb, QueueKind queue) {
            this.verb = verb;
            this.queue = queue;
        }

        /** {@code fetch}, {@code ack}, {@code enqueue}, {@code renew} or {@code abandon}. */
        public String verb() {
            return verb;
        }

        public QueueKind queue() {
            return queue;
        }

        /**
         * The timed operation an SPI operation name stands for, or null for one that is not timed (history, client
         * reads, management). A combined ack-and-fetch counts as an ack; batched calls as their single kin.
         */
        public static Operation of(String spiOperation) {
            switch (spiOperation) {
                case "fetchOrchestrationItem": return FETCH_ORCHESTRATION;
                case "ackOrchestrationItem": return ACK_ORCHESTRATION;
                case "enqueueForOrchestrator":
                case "enqueueAllForOrchestrator": return ENQUEUE_ORCHESTRATION;
                case "renewOrchestrationItemLock": return RENEW_ORCHESTRATION;
                case "abandonOrchestrationItem": return ABANDON_ORCHESTRATION;
                case "fetchWorkItem":
                case "fetchWorkItems": return FETCH_WORK;
                case "ackWorkItem":
                case "ackWorkItems":
                case "ackWorkItemAndFetchNext": return ACK_WORK;
                case "enqueueForWorker":
                case "enqueueAllForWorker": return ENQUEUE_WORK;
                case "renewWorkItemLock": return RENEW_WORK;
                case "abandonWorkItem": return ABANDON_WORK;
                default: return null;
            }
        }
    }

    /** How a call ended: as {@link io.pgdurable.spi.ProviderException#retryable()} classifies its failure. */
    enum Outcome {
        OK("ok"),
        RETRYABLE("retryable"),
        PERMANENT("permanent");

        private final String label;

        Outcome(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }
}
