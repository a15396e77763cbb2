package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.bench.Bench;
import org.junit.jupiter.api.Test;

/** {@code bench --help} names every scenario {@code --scenarios} accepts. */
class BenchHelpTest {

    @Test
    void the_help_lists_every_scenario() {
        PgDurableCliTest.Result r = PgDurableCliTest.cli("bench", "--help");
        assertEquals(0, r.code(), r.all());
        String help = r.out().replaceAll("\\s+", " ");
        for (String scenario : Bench.SCENARIOS) {
            assertTrue(help.contains(" " + scenario + ",") || help.contains(" " + scenario + "."),
                    "bench --help does not name " + scenario + ":\n" + r.out());
        }
    }
}
