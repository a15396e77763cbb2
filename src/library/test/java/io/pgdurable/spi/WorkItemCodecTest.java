package io.pgdurable.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class WorkItemCodecTest {

    @Test
    void every_variant_round_trips() {
        List<WorkItem> items = List.of(
                new WorkItem.StartOrchestration("i", "O", "{\"x\":1}", "1.2.3", "parent", 7L, 2),
                new WorkItem.StartOrchestration("i", "O", "in", null),
                new WorkItem.ContinueAsNew("i", "O", "next", null,
                        List.of(new WorkItem.CarriedEvent("e", "d")), "status"),
                new WorkItem.ActivityExecute("i", 3, 4, "A", "in", "session", "gpu"),
                new WorkItem.ActivityExecute("i", 3, 4, "A", "in"),
                new WorkItem.ActivityCompleted("i", 1, 2, "r"),
                new WorkItem.ActivityFailed("i", 1, 2, "boom"),
                new WorkItem.TimerFired("i", 1, 5, 1_700_000_000_000L),
                new WorkItem.ExternalRaised("i", "ev", "data"),
                new WorkItem.QueueMessage("i", "q", "data"),
                new WorkItem.SubOrchCompleted("p", 1, 9, "r"),
                new WorkItem.SubOrchFailed("p", 1, 9, "d"),
                new WorkItem.CancelInstance("i", "why"));
        for (WorkItem item : items) {
            assertEquals(item, WorkItem.fromJson(item.toJson()), item.toJson());
        }
    }

    @Test
    void wire_form_is_externally_tagged_snake_case_without_absent_optionals() {
        assertEquals("{\"ActivityExecute\":{\"instance\":\"i\",\"execution_id\":1,\"id\":2,\"name\":\"A\","
                + "\"input\":\"x\",\"tag\":\"gpu\"}}",
                new WorkItem.ActivityExecute("i", 1, 2, "A", "x", null, "gpu").toJson());
        assertEquals("p", new WorkItem.SubOrchCompleted("p", 1, 9, "r").instance(), "routes to the parent");
    }

    @Test
    void malformed_items_are_rejected_with_the_field_named() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> WorkItem.fromJson("{\"TimerFired\":{\"instance\":\"i\",\"execution_id\":1,\"id\":\"x\"}}"));
        assertTrue(e.getMessage().contains("TimerFired.id"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> WorkItem.fromJson("{\"Nope\":{}}"));
        assertTrue(e.getMessage().contains("Nope"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> WorkItem.fromJson("{\"A\":{},\"B\":{}}"));
        assertTrue(e.getMessage().contains("exactly one"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new WorkItem.ExternalRaised("", "n", "d"));
        assertTrue(e.getMessage().contains("instance"), e.getMessage());
    }

    @Test
    void tag_filters_match_as_the_contract_says() {
        assertTrue(TagFilter.defaultOnly().matches(null));
        assertTrue(!TagFilter.defaultOnly().matches("gpu"));
        assertTrue(TagFilter.tags("gpu").matches("gpu") && !TagFilter.tags("gpu").matches(null));
        assertTrue(TagFilter.defaultAnd("gpu").matches(null) && TagFilter.defaultAnd("gpu").matches("gpu"));
        assertTrue(!TagFilter.defaultAnd("gpu").matches("cpu"));
        assertTrue(TagFilter.any().matches("x") && !TagFilter.none().matches(null));
        assertThrows(IllegalArgumentException.class, () -> TagFilter.tags());
        assertThrows(IllegalArgumentException.class, () -> TagFilter.tags("a", "b", "c", "d", "e", "f"));
    }

    @Test
    void semver_packs_in_order_and_validates() {
        assertTrue(SemVer.parse("1.9.99").packed() < SemVer.parse("2.0.0").packed());
        assertEquals(new SemVer(1, 2, 3), SemVer.parse("1.2.3"));
        assertThrows(IllegalArgumentException.class, () -> SemVer.parse("1.2"));
        assertThrows(IllegalArgumentException.class, () -> new SemVer(1, 1000, 0));
        assertThrows(IllegalArgumentException.class,
                () -> new SemverRange(SemVer.parse("2.0.0"), SemVer.parse("1.0.0")));
    }
}
