package io.pgdurable.bench;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The costs a measurement window divides by its units, read from a real server on this machine. */
class UnitCostsTest {

    @Test
    void work_done_on_the_server_between_two_readings_shows_as_server_cpu_wal_and_round_trips() throws Exception {
        String table = Identifiers.quote("unit_costs_" + UUID.randomUUID().toString().replace("-", "")
                .substring(0, 12));
        try (ServerStatementCounter counter = ServerStatementCounter.open(TestDatabase.url());
             Connection c = DriverManager.getConnection(TestDatabase.url());
             Statement st = c.createStatement()) {
            UnitCosts costs = UnitCosts.locate(counter);
            assertNull(costs.unavailable(), "the test server runs on this machine");
            st.execute("CREATE TABLE " + table + " (id bigint, pad text)");
            try {
                UnitCosts.Reading idle0 = costs.read();
                UnitCosts.Reading idle1 = costs.read();
                UnitCosts.Spent idle = UnitCosts.between(idle0, idle1);
                UnitCosts.Reading before = costs.read();
                // About a second of one backend's CPU and a few megabytes of WAL.
                st.execute("SELECT count(*) FROM generate_series(1, 20000000)");
                st.execute("INSERT INTO " + table + " SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g");
                for (int i = 0; i < 50; i++) {
                    st.execute("SELECT 1");
                }
                UnitCosts.Spent spent = UnitCosts.between(before, costs.read());
                // Other tests may run on the server meanwhile: the figures are bounded from below only.
                assertTrue(spent.serverCpuMillis() >= 200, "server CPU of the work: " + spent);
                assertTrue(spent.serverCpuMillis() > idle.serverCpuMillis() + 100, "idle " + idle + ", work " + spent);
                assertTrue(spent.walBytes() >= 2_000_000, "WAL of 20,000 rows of 100 bytes: " + spent);
                assertTrue(spent.clientWrites() >= 52, "a write call per round trip (52 statements): " + spent);
                assertTrue(spent.clientCpuMillis() >= 0, spent.toString());
            } finally {
                st.execute("DROP TABLE " + table);
            }
        }
    }
}
