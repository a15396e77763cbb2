package io.pgdurable.matrix;

import org.junit.platform.suite.api.ConfigurationParameter;
import org.junit.platform.suite.api.IncludeClassNamePatterns;
import org.junit.platform.suite.api.SelectPackages;
import org.junit.platform.suite.api.Suite;

/** The long-poll conformance modules and the long-poll tests on an embedded PostgreSQL 14 ({@link MatrixMajor}). */
@Suite
@SelectPackages({"io.pgdurable.postgres.conformance.longmode", "io.pgdurable.postgres.longpoll"})
@IncludeClassNamePatterns(".*Test")
@ConfigurationParameter(key = MatrixMajor.KEY, value = "14")
@ConfigurationParameter(key = "junit.jupiter.extensions.autodetection.enabled", value = "true")
public class Pg14Matrix {
}
