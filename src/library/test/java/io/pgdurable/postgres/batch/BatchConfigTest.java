package io.pgdurable.postgres.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.BatchEnqueueException;
import io.pgdurable.spi.WorkBatch;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The batching settings and WorkBatch: defaults, and every bad bound refused with a message naming it. */
class BatchConfigTest {
    private static PostgresProviderConfig.Builder base() {
        return PostgresProviderConfig.builder().jdbcUrl("jdbc:postgresql://localhost/never-contacted");
    }

    private static void refused(String setting, UnaryOperator<PostgresProviderConfig.Builder> tune) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tune.apply(base()).build(),
                setting + " should be refused");
        assertTrue(e.getMessage().startsWith(setting + " must"), "the message names the setting: " + e.getMessage());
    }

    @Test
    void defaults_keep_todays_behaviour() {
        PostgresProviderConfig c = base().build();
        assertEquals(1, c.ackBatchSize(), "batched acks are opt-in");
        assertEquals(Duration.ofSeconds(2), c.ackDrainTimeout());
        assertEquals(Duration.ofMillis(2), c.ackFlushIdle());
        assertEquals(500, c.enqueueChunkItems());
        assertEquals(4 * 1024 * 1024, c.enqueueChunkBytes());
        assertEquals(Duration.ZERO, c.enqueueRetryBudget(), "fail fast");
        assertEquals(16 * 1024 * 1024, c.fetchBatchMaxBytes());
    }

    @Test
    void settings_survive_to_builder() {
        PostgresProviderConfig c = base().ackBatchSize(16).ackFlushIdle(Duration.ZERO).ackDrainTimeout(Duration.ZERO)
                .enqueueChunkItems(7).enqueueChunkBytes(2048).enqueueRetryBudget(Duration.ofSeconds(3))
                .fetchBatchMaxBytes(4096).build().toBuilder().build();
        assertEquals(16, c.ackBatchSize());
        assertEquals(Duration.ZERO, c.ackFlushIdle());
        assertEquals(Duration.ZERO, c.ackDrainTimeout());
        assertEquals(7, c.enqueueChunkItems());
        assertEquals(2048, c.enqueueChunkBytes());
        assertEquals(Duration.ofSeconds(3), c.enqueueRetryBudget());
        assertEquals(4096, c.fetchBatchMaxBytes());
        assertTrue(c.toString().contains("ackBatchSize=16"), c.toString());
    }

    @Test
    void zero_and_negative_bounds_are_refused_or_mean_what_the_docs_say() {
        refused("ackBatchSize", b -> b.ackBatchSize(0));
        refused("ackBatchSize", b -> b.ackBatchSize(-1));
        refused("ackBatchSize", b -> b.ackBatchSize(PostgresProviderConfig.MAX_ACK_BATCH_SIZE + 1));
        refused("ackFlushIdle", b -> b.ackFlushIdle(Duration.ofMillis(-1)));
        refused("ackFlushIdle", b -> b.ackFlushIdle(null));
        refused("ackFlushIdle", b -> b.ackFlushIdle(Duration.ofSeconds(2)));
        refused("ackDrainTimeout", b -> b.ackDrainTimeout(Duration.ofSeconds(-1)));
        refused("ackDrainTimeout", b -> b.ackDrainTimeout(null));
        refused("ackDrainTimeout", b -> b.ackDrainTimeout(Duration.ofMinutes(11)));
        refused("enqueueChunkItems", b -> b.enqueueChunkItems(0));
        refused("enqueueChunkItems", b -> b.enqueueChunkItems(-5));
        refused("enqueueChunkItems", b -> b.enqueueChunkItems(10_001));
        refused("enqueueChunkBytes", b -> b.enqueueChunkBytes(0));
        refused("enqueueChunkBytes", b -> b.enqueueChunkBytes(-1));
        refused("enqueueChunkBytes", b -> b.enqueueChunkBytes(1023));
        refused("enqueueRetryBudget", b -> b.enqueueRetryBudget(Duration.ofMillis(-1)));
        refused("enqueueRetryBudget", b -> b.enqueueRetryBudget(null));
        refused("enqueueRetryBudget", b -> b.enqueueRetryBudget(Duration.ofHours(1)));
        refused("fetchBatchMaxBytes", b -> b.fetchBatchMaxBytes(0));
        refused("fetchBatchMaxBytes", b -> b.fetchBatchMaxBytes(-1));
        // Zero where the documentation gives it a meaning: no idle window, no drain, fail fast.
        PostgresProviderConfig zero = base().ackBatchSize(2).ackFlushIdle(Duration.ZERO)
                .ackDrainTimeout(Duration.ZERO).enqueueRetryBudget(Duration.ZERO).build();
        assertEquals(Duration.ZERO, zero.ackFlushIdle());
    }

    @Test
    void work_batch_bounds_are_checked() {
        WorkBatch ok = new WorkBatch(WorkBatch.MAX_ITEMS, WorkBatch.MAX_ITEMS, Duration.ZERO);
        assertEquals(1000, ok.maxItems());
        assertEquals(new WorkBatch(5, 1, Duration.ZERO), WorkBatch.upTo(5));
        assertEquals(new WorkBatch(5, 1, Duration.ofSeconds(1)), WorkBatch.upTo(5, Duration.ofSeconds(1)));
        for (Runnable bad : List.<Runnable>of(
                () -> new WorkBatch(0, 1, Duration.ZERO),
                () -> new WorkBatch(WorkBatch.MAX_ITEMS + 1, 1, Duration.ZERO),
                () -> new WorkBatch(5, 0, Duration.ZERO),
                () -> new WorkBatch(5, 6, Duration.ZERO),
                () -> new WorkBatch(5, 1, Duration.ofMillis(-1)))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bad::run);
            assertTrue(e.getMessage().startsWith("WorkBatch "), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new WorkBatch(5, 1, null));
    }

    @Test
    void a_batch_enqueue_exception_lists_every_index_once() {
        BatchEnqueueException e = new BatchEnqueueException("op", "boom", true, "08006", null, 10, 4, 3);
        assertEquals(List.of(0, 1, 2, 3), e.stored());
        assertEquals(List.of(4, 5, 6), e.inDoubt());
        assertEquals(List.of(7, 8, 9), e.notStored());
        assertTrue(e.getMessage().contains("stored #0..#3, in doubt #4..#6, not stored #7..#9"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new BatchEnqueueException("op", "boom", true, null, null, 3, 2, 2));
    }
}
