package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.TestDatabase;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code pgdurable chaos} in-process against the suite's PostgreSQL for a short run: it must pass (exit 0, nothing
 * lost, no unexplained second delivery, every caller's error retryable), and each kind of fault must really have
 * happened and been noticed, so a run in which the chaos did nothing fails.
 */
class ChaosCommandTest {
    @ParameterizedTest
    @ValueSource(strings = {"pgjdbc-ng", "pgjdbc"})
    void a_short_run_kills_and_pauses_and_loses_nothing(String listenerDriver) {
        String schema = TestDatabase.newSchemaName("chaos");
        PgDurableCliTest.Result r;
        try {
            r = PgDurableCliTest.cli("chaos", "--db", TestDatabase.url(), "--schema", schema, "--seconds", "25",
                    "--rate", "150", "--listener-driver", listenerDriver);
        } finally {
            TestDatabase.dropSchema(schema);
        }
        String out = r.out();
        assertEquals(0, r.code(), "exit code; output:\n" + r.all());
        assertEquals(0, number(out, "lost:\\s+(\\d+)"), out);
        assertEquals(0, number(out, "unexplained: (\\d+)"), out);
        assertEquals(0, number(out, "errors:.*permanent (\\d+)"), "every error a caller saw is retryable:\n" + out);
        assertTrue(out.contains("queue drained"), out);
        assertTrue(number(out, "produced:\\s+(\\d+) committed") >= 500, "the load ran:\n" + out);
        assertTrue(number(out, "faults:.*listener kills (\\d+)") >= 1,
                "the listener's backend was terminated:\n" + out);
        assertTrue(number(out, "faults:.*pool kills (\\d+)") >= 1, "pool backends were terminated:\n" + out);
        assertTrue(number(out, "faults:.*relay pauses (\\d+)") >= 1, "the listener's relay paused:\n" + out);
        // pgjdbc-ng may spend a loaded machine's whole run connecting (it loads the type catalogue on the connecting
        // thread, seconds under load): a kill then ends an attempt instead of a LISTENing connection
        assertTrue(number(out, "lost its connection (\\d+) times") + number(out, "(\\d+) connection attempts failed")
                >= 1, "the faults reached the listener:\n" + out);
        assertTrue(out.contains("result:      PASS"), out);
    }

    @Test
    void bad_options_are_usage_errors_naming_the_option() {
        PgDurableCliTest.Result both = PgDurableCliTest.cli("chaos", "--db", TestDatabase.url(), "--minutes", "1",
                "--seconds", "10");
        assertEquals(2, both.code(), both.all());
        assertTrue(both.err().contains("--minutes and --seconds exclude each other"), both.err());

        PgDurableCliTest.Result tooShort = PgDurableCliTest.cli("chaos", "--db", TestDatabase.url(), "--seconds",
                "1");
        assertEquals(2, tooShort.code(), tooShort.all());
        assertTrue(tooShort.err().contains("between 5 s and 24 h"), tooShort.err());

        PgDurableCliTest.Result driver = PgDurableCliTest.cli("chaos", "--db", TestDatabase.url(),
                "--listener-driver", "odbc");
        assertEquals(2, driver.code(), driver.all());
        assertTrue(driver.err().contains("--listener-driver must be pgjdbc-ng or pgjdbc"), driver.err());

        PgDurableCliTest.Result hosts = PgDurableCliTest.cli("chaos", "--db",
                "jdbc:postgresql://127.0.0.1:5432,127.0.0.1:5433/test?user=postgres");
        assertEquals(2, hosts.code(), hosts.all());
        assertTrue(hosts.err().contains("several hosts"), hosts.err());

        PgDurableCliTest.Result noDb = PgDurableCliTest.cli("chaos", "--seconds", "10");
        assertEquals(2, noDb.code(), noDb.all());
        assertTrue(noDb.err().contains("--db"), noDb.err());

        PgDurableCliTest.Result rate = PgDurableCliTest.cli("chaos", "--db", TestDatabase.url(), "--rate", "0");
        assertEquals(2, rate.code(), rate.all());
        assertTrue(rate.err().contains("--rate must be between 1 and 100000, was 0"), rate.err());
    }

    private static long number(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), "no match for '" + regex + "' in:\n" + text);
        return Long.parseLong(m.group(1));
    }
}
