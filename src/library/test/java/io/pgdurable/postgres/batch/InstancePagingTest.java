package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Paged listing: {@code listInstancesAfter} reads one page of instance ids in storage, in the database's order of
 * the primary key, so that the sidecar's paged queries cost a page each instead of the whole hub.
 */
class InstancePagingTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private static final List<String> IDS = List.of("b-1", "a-2", "@counter@x", "a-10", "c", "@counter@y", "a-",
            "ab", "@", "z-9");
    private final Hubs hubs = new Hubs("paging");
    private String schema;

    @AfterEach
    void stop() {
        hubs.close();
    }

    private ProviderAdmin adminWithInstances() {
        schema = hubs.newSchema();
        PostgresProvider p = hubs.open(schema, b -> b);
        for (String id : IDS) {
            p.enqueueForOrchestrator(new WorkItem.StartOrchestration(id, "O", "{}", "1.0.0"), null);
            FetchedOrchestration f = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
            p.ackOrchestrationItem(f.lockToken(), f.item().executionId(),
                    List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")), List.of(), List.of(),
                    ExecutionMetadata.of("O", "1.0.0"), List.of());
        }
        return p.asManagementCapability().orElseThrow();
    }

    /** The database's own order of the ids, which the pages must follow whatever its collation. */
    private List<String> databaseOrder(String prefix) {
        return BatchDb.strings("SELECT instance_id FROM " + q(schema) + ".instances WHERE starts_with(instance_id, '"
                + prefix + "') ORDER BY instance_id");
    }

    private static List<String> pageThrough(ProviderAdmin admin, String prefix, int limit) {
        List<String> all = new ArrayList<>();
        String after = "";
        for (int pages = 0; pages <= IDS.size() + 1; pages++) {
            List<String> page = admin.listInstancesAfter(after, prefix, limit);
            assertTrue(page.size() <= limit, "a page holds at most the limit: " + page);
            if (page.isEmpty()) {
                return all;
            }
            all.addAll(page);
            after = page.get(page.size() - 1);
        }
        throw new AssertionError("paging did not end: " + all);
    }

    @Test
    void pages_visit_every_instance_once_in_the_database_order() {
        ProviderAdmin admin = adminWithInstances();
        List<String> expected = databaseOrder("");
        assertEquals(new TreeSet<>(IDS), new TreeSet<>(expected), "every instance was created");
        for (int limit : new int[] {1, 3, IDS.size(), IDS.size() + 5}) {
            assertEquals(expected, pageThrough(admin, "", limit), "pages of " + limit);
        }
        assertEquals(List.of(), admin.listInstancesAfter(expected.get(expected.size() - 1), "", 5),
                "nothing after the last id");
    }

    @Test
    void a_prefix_keeps_only_the_ids_that_start_with_it() {
        ProviderAdmin admin = adminWithInstances();
        List<String> entities = databaseOrder("@");
        assertEquals(Set.of("@counter@x", "@counter@y", "@"), Set.copyOf(entities));
        assertEquals(entities, pageThrough(admin, "@", 1));
        List<String> dashed = databaseOrder("a-");
        assertEquals(Set.of("a-2", "a-10", "a-"), Set.copyOf(dashed));
        assertEquals(dashed, pageThrough(admin, "a-", 2));
        assertEquals(dashed.subList(1, dashed.size()), admin.listInstancesAfter(dashed.get(0), "a-", 10),
                "continued after the first of them");
        assertEquals(List.of(), admin.listInstancesAfter("", "none-", 10));
    }

    @Test
    void bad_arguments_are_refused_permanently_and_change_nothing() {
        ProviderAdmin admin = adminWithInstances();
        List<String> before = admin.listInstances();
        ProviderException noAfter = assertThrows(ProviderException.class,
                () -> admin.listInstancesAfter(null, "", 10));
        assertFalse(noAfter.retryable());
        assertTrue(noAfter.getMessage().contains("after"), noAfter.getMessage());
        ProviderException noPrefix = assertThrows(ProviderException.class,
                () -> admin.listInstancesAfter("", null, 10));
        assertFalse(noPrefix.retryable());
        assertTrue(noPrefix.getMessage().contains("prefix"), noPrefix.getMessage());
        for (int limit : new int[] {0, -1}) {
            ProviderException bad = assertThrows(ProviderException.class,
                    () -> admin.listInstancesAfter("", "", limit));
            assertFalse(bad.retryable());
            assertTrue(bad.getMessage().contains("limit"), bad.getMessage());
        }
        assertEquals(before, admin.listInstances());
    }

    /** A provider that does not override it gets the interface's default: the whole list, in Java's order. */
    @Test
    void the_default_pages_the_whole_list_in_java_order() {
        ProviderAdmin real = adminWithInstances();
        ProviderAdmin plain = (ProviderAdmin) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {ProviderAdmin.class}, (proxy, method, args) -> method.isDefault()
                        ? InvocationHandler.invokeDefault(proxy, method, args)
                        : method.invoke(real, args));
        assertEquals(List.copyOf(new TreeSet<>(IDS)), pageThrough(plain, "", 3));
        assertEquals(List.of("a-", "a-10", "a-2"), pageThrough(plain, "a-", 1));
        assertThrows(ProviderException.class, () -> plain.listInstancesAfter("", "", 0));
    }
}
