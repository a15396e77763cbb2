package io.pgdurable.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** A value built with a missing field fails at once with a message naming the type and the field. */
class SpiArgumentsTest {

    static Stream<Arguments> missingFields() {
        return Stream.of(
                bad("WorkItem.ActivityExecute: field 'input' must not be null",
                        () -> new WorkItem.ActivityExecute("i", 1, 2, "Charge", null)),
                bad("WorkItem.ActivityExecute: field 'name' must be a non-empty string",
                        () -> new WorkItem.ActivityExecute("i", 1, 2, null, "{}")),
                bad("WorkItem.ActivityExecute: field 'instance' must be a non-empty string",
                        () -> new WorkItem.ActivityExecute("", 1, 2, "Charge", "{}")),
                bad("WorkItem.StartOrchestration: field 'input' must not be null",
                        () -> new WorkItem.StartOrchestration("i", "O", null, "1.0.0")),
                bad("WorkItem.StartOrchestration: field 'orchestration' must be a non-empty string",
                        () -> new WorkItem.StartOrchestration("i", null, "{}", "1.0.0")),
                bad("WorkItem.ContinueAsNew: field 'input' must not be null",
                        () -> new WorkItem.ContinueAsNew("i", "O", null, "1", List.of(), null)),
                bad("WorkItem.ContinueAsNew: field 'carryForwardEvents' must not hold null elements",
                        () -> new WorkItem.ContinueAsNew("i", "O", "{}", "1",
                                Arrays.asList(new WorkItem.CarriedEvent("e", "{}"), null), null)),
                bad("WorkItem.CarriedEvent: field 'data' must not be null",
                        () -> new WorkItem.CarriedEvent("e", null)),
                bad("WorkItem.ActivityCompleted: field 'result' must not be null",
                        () -> new WorkItem.ActivityCompleted("i", 1, 2, null)),
                bad("WorkItem.ActivityFailed: field 'details' must not be null",
                        () -> new WorkItem.ActivityFailed("i", 1, 2, null)),
                bad("WorkItem.TimerFired: field 'instance' must be a non-empty string",
                        () -> new WorkItem.TimerFired(null, 1, 2, 0)),
                bad("WorkItem.ExternalRaised: field 'name' must not be null",
                        () -> new WorkItem.ExternalRaised("i", null, "{}")),
                bad("WorkItem.QueueMessage: field 'data' must not be null",
                        () -> new WorkItem.QueueMessage("i", "n", null)),
                bad("WorkItem.SubOrchCompleted: field 'parentInstance' must be a non-empty string",
                        () -> new WorkItem.SubOrchCompleted(null, 1, 2, "{}")),
                bad("WorkItem.SubOrchFailed: field 'details' must not be null",
                        () -> new WorkItem.SubOrchFailed("p", 1, 2, null)),
                bad("WorkItem.CancelInstance: field 'reason' must not be null",
                        () -> new WorkItem.CancelInstance("i", null)),
                bad("Event: field 'data' must not be null", () -> new Event(1, "ActivityScheduled", null)),
                bad("Event: field 'type' must not be null", () -> new Event(1, null, "{}")),
                bad("SessionFetchConfig: field 'lockTimeout' must not be null",
                        () -> new SessionFetchConfig("owner", null)),
                bad("SessionFetchConfig: field 'ownerId' must not be null",
                        () -> new SessionFetchConfig(null, Duration.ofSeconds(1))),
                bad("ScheduledActivityIdentifier: field 'instance' must be a non-empty string",
                        () -> new ScheduledActivityIdentifier(null, 1, 2)),
                bad("SemverRange: field 'max' must not be null", () -> new SemverRange(new SemVer(1, 0, 0), null)),
                bad("WorkBatch: field 'maxWait' must not be null (Duration.ZERO for no wait)",
                        () -> new WorkBatch(5, 1, null)),
                bad("TagFilter: a tag must not be null", () -> TagFilter.tags("gpu", null)),
                bad("tags must be non-empty strings", () -> new TagFilter.Tags(new HashSet<>(Arrays.asList("a", null)))),
                bad("a tag filter needs at least one tag", () -> new TagFilter.DefaultAnd(Set.of())));
    }

    private static Arguments bad(String message, Executable construction) {
        return Arguments.of(message, construction);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("missingFields")
    void refused_with_the_field_named(String message, Executable construction) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, construction);
        assertEquals(message, e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("missingFields")
    void never_a_bare_null_pointer_exception(String message, Executable construction) {
        Throwable t = assertThrows(Throwable.class, construction);
        assertEquals(IllegalArgumentException.class, t.getClass(), "for: " + message);
    }

    @org.junit.jupiter.api.Test
    void repeatedTagsAreOneTag() {
        assertEquals(Set.of("gpu"), ((TagFilter.Tags) TagFilter.tags("gpu", "gpu")).tags());
    }
}
