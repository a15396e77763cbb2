package io.pgdurable.matrix;

import org.junit.platform.suite.api.ConfigurationParameter;

/** The long-poll conformance modules and the long-poll tests on an embedded PostgreSQL 14 ({@link MatrixMajor}). */
@LongPollMatrix
@ConfigurationParameter(key = MatrixMajor.KEY, value = "14")
public class Pg14Matrix {
}
