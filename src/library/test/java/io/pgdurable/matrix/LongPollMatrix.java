package io.pgdurable.matrix;

import io.pgdurable.postgres.conformance.ConformanceMode;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.platform.suite.api.ConfigurationParameter;
import org.junit.platform.suite.api.IncludeClassNamePatterns;
import org.junit.platform.suite.api.SelectPackages;
import org.junit.platform.suite.api.Suite;

/**
 * What every matrix suite runs: the conformance modules in long-poll mode and the long-poll tests, with
 * {@link MatrixMajor} registered. The conformance bindings run once per mode; the selection parameter keeps the
 * long-poll mode alone ({@link ConformanceMode#SELECTION}). A suite class adds only its major
 * ({@code @ConfigurationParameter(key = MatrixMajor.KEY, ...)}).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Suite
@SelectPackages({"io.pgdurable.postgres.conformance", "io.pgdurable.postgres.longpoll"})
@IncludeClassNamePatterns(".*Test")
@ConfigurationParameter(key = ConformanceMode.SELECTION, value = "LONG_POLL")
@ConfigurationParameter(key = "junit.jupiter.extensions.autodetection.enabled", value = "true")
@interface LongPollMatrix {
}
