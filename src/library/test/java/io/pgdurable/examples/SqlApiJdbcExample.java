package io.pgdurable.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * The JDBC example of docs/sql-api.md: a service that is not a pgdurable provider raises an event through the SQL
 * API. {@code SqlApiDocExamplesTest} runs it and checks that the page shows it exactly as compiled.
 */
public final class SqlApiJdbcExample {
    private SqlApiJdbcExample() {}

    /** Raises PaymentReceived for an order of the {@code orders_hub} task hub. */
    public static void paymentReceived(Connection connection, String orderId, long amountCents) throws SQLException {
        // docs/sql-api.md:jdbc:begin
        try (PreparedStatement ps = connection.prepareStatement("SELECT orders_hub.raise_event(?, ?, ?)")) {
            ps.setString(1, orderId);
            ps.setString(2, "PaymentReceived");
            ps.setString(3, "{\"amount\": " + amountCents + "}");
            ps.execute();
        } catch (SQLException e) {
            if ("PD002".equals(e.getSQLState())) {
                // Refused input: permanent, so retrying the same call cannot succeed.
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            throw e;
        }
        // docs/sql-api.md:jdbc:end
    }
}
