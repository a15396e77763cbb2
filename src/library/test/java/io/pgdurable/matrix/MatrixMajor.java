package io.pgdurable.matrix;

import io.pgdurable.postgres.TestDatabase;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Points {@link TestDatabase} at the major a matrix suite ({@code Pg14Matrix}, ...) names, before any test class of
 * the suite runs. Registered for every class through the service loader; it does nothing outside a matrix suite.
 * A condition rather than a before-all callback, because conditions are evaluated before anything of the class
 * runs. The pom runs each suite in a JVM of its own; a JVM asked for a second major fails loudly
 * ({@link TestDatabase#useMajor}).
 */
public final class MatrixMajor implements ExecutionCondition {
    /** The suites' configuration parameter naming the major. */
    public static final String KEY = "pgdurable.test.matrixMajor";

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        context.getConfigurationParameter(KEY).ifPresent(major -> TestDatabase.useMajor(Integer.parseInt(major)));
        return ConditionEvaluationResult.enabled("runs on every major");
    }
}
