package io.pgdurable.matrix;

import org.junit.platform.suite.api.ConfigurationParameter;

/** The long-poll conformance modules and the long-poll tests on an embedded PostgreSQL 16 ({@link MatrixMajor}). */
@LongPollMatrix
@ConfigurationParameter(key = MatrixMajor.KEY, value = "16")
public class Pg16Matrix {
}
