package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.WorkItem;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The sidecar's paged listings read ids a chunk at a time from the provider: across chunk boundaries every id comes
 * once, in the provider's order, from the continuation on, and a listing that stops early reads only what it used.
 */
class InstanceIdsTest {
    private static PostgresProvider provider;
    private static ProviderAdmin admin;
    private static List<String> all;

    @BeforeAll
    static void start() {
        provider = PostgresProvider.create(TestDatabase.config(TestDatabase.newSchemaName("ids")).build());
        List<String> ids = new ArrayList<>(IntStream.range(0, 11).mapToObj(i -> "orch-" + i).toList());
        ids.addAll(List.of("@counter@a", "@counter@b", "@timer@x"));
        for (String id : ids) {
            provider.enqueueForOrchestrator(new WorkItem.StartOrchestration(id, "O", "{}", "1.0.0"), null);
            FetchedOrchestration f = provider.fetchOrchestrationItem(Duration.ofMinutes(1), Duration.ZERO, null)
                    .orElseThrow();
            provider.ackOrchestrationItem(f.lockToken(), f.item().executionId(),
                    List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")), List.of(), List.of(),
                    ExecutionMetadata.of("O", "1.0.0"), List.of());
        }
        admin = provider.asManagementCapability().orElseThrow();
        all = admin.listInstancesAfter("", "", 1000);
        assertEquals(ids.size(), all.size());
    }

    @AfterAll
    static void stop() {
        provider.close();
    }

    private static List<String> list(Iterable<String> ids) {
        List<String> out = new ArrayList<>();
        ids.forEach(out::add);
        return out;
    }

    @Test
    void every_id_comes_once_in_order_whatever_the_chunk() {
        for (int chunk : new int[] {1, 2, 3, all.size() - 1, all.size(), all.size() + 1, InstanceIds.CHUNK}) {
            assertEquals(all, list(InstanceIds.after(admin, "", "", chunk)), "chunks of " + chunk);
        }
    }

    @Test
    void a_listing_goes_on_after_the_continuation_and_keeps_to_the_prefix() {
        String middle = all.get(5);
        assertEquals(all.subList(6, all.size()), list(InstanceIds.after(admin, middle, "", 4)));
        List<String> entities = all.stream().filter(id -> id.startsWith("@")).toList();
        assertEquals(3, entities.size());
        assertEquals(entities, list(InstanceIds.after(admin, "", "@", 2)));
        assertEquals(List.of("@timer@x"), list(InstanceIds.after(admin, "", "@timer@", 2)));
        assertEquals(List.of(), list(InstanceIds.after(admin, all.get(all.size() - 1), "", 2)));
    }

    @Test
    void a_listing_that_stops_early_reads_only_the_chunks_it_used() {
        List<Map.Entry<String, Integer>> calls = new ArrayList<>();
        ProviderAdmin counting = (ProviderAdmin) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {ProviderAdmin.class}, (proxy, method, args) -> {
                    if (method.getName().equals("listInstancesAfter")) {
                        calls.add(Map.entry((String) args[0], (Integer) args[2]));
                    }
                    return method.invoke(admin, args);
                });
        Iterator<String> it = InstanceIds.after(counting, "", "", 4).iterator();
        for (int i = 0; i < 5; i++) {
            assertEquals(all.get(i), it.next());
        }
        assertEquals(List.of(Map.entry("", 4), Map.entry(all.get(3), 4)), calls,
                "two chunks of 4 for five ids, the second continued from the first one's last id");
    }
}
