package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ConformanceTestBase;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsProvider;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.params.support.ParameterDeclarations;

/**
 * Marks the PostgreSQL binding of one conformance module: a class that extends the module directly (for example
 * {@code AtomicityTests}), takes its {@link ConformanceMode} in a {@code @Parameter} field and returns
 * {@code mode.newFactory()} from {@code newFactory()}. JUnit runs the class once in every mode that lists the module,
 * narrowed to the modes {@link ConformanceMode#SELECTION} names when it is set.
 *
 * <p>The modes of one binding run side by side ({@code CONCURRENT}): JUnit gives a parameterised class the suite's
 * default execution mode ({@code same_thread}), not the one for classes, and the modes would queue behind one
 * another. A mode's tests then run side by side as well, which the kit allows: every test gets storage of its own.
 * The suite's parallelism still bounds how many tests run at once (docs/testing.md).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@ParameterizedClass(allowZeroInvocations = true)
@ArgumentsSource(ConformanceBinding.Modes.class)
@Execution(ExecutionMode.CONCURRENT)
@interface ConformanceBinding {

    /**
     * The modes of the annotated binding's module. None when a selection excludes them all (the matrix selects the
     * long-poll mode, which the short-polling module has not); a module that no mode lists at all is an error.
     */
    final class Modes implements ArgumentsProvider {
        @Override
        public Stream<? extends Arguments> provideArguments(ParameterDeclarations parameters,
                                                            ExtensionContext context) {
            Class<?> binding = context.getRequiredTestClass();
            Class<?> module = binding.getSuperclass();
            if (module == null || module.getPackage() != ConformanceTestBase.class.getPackage()
                    || !ConformanceTestBase.class.isAssignableFrom(module)) {
                throw new IllegalStateException(binding.getName() + " must extend a conformance module of "
                        + ConformanceTestBase.class.getPackageName() + " directly");
            }
            List<ConformanceMode> modes = ConformanceMode.running(module);
            if (modes.isEmpty()) {
                throw new IllegalStateException(binding.getName() + " binds " + module.getSimpleName()
                        + ", which no ConformanceMode runs: list it in a mode");
            }
            Set<ConformanceMode> selected = context.getConfigurationParameter(ConformanceMode.SELECTION)
                    .map(ConformanceMode::selected).orElse(Set.of(ConformanceMode.values()));
            return modes.stream().filter(selected::contains).map(Arguments::of);
        }
    }
}
