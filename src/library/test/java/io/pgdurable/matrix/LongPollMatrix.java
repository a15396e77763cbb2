package io.pgdurable.matrix;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.platform.suite.api.ConfigurationParameter;
import org.junit.platform.suite.api.IncludeClassNamePatterns;
import org.junit.platform.suite.api.SelectPackages;
import org.junit.platform.suite.api.Suite;

/**
 * What every matrix suite runs: the long-poll conformance modules and the long-poll tests, with {@link MatrixMajor}
 * registered. A suite class adds only its major ({@code @ConfigurationParameter(key = MatrixMajor.KEY, ...)}).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Suite
@SelectPackages({"io.pgdurable.postgres.conformance.longmode", "io.pgdurable.postgres.longpoll"})
@IncludeClassNamePatterns(".*Test")
@ConfigurationParameter(key = "junit.jupiter.extensions.autodetection.enabled", value = "true")
@interface LongPollMatrix {
}
