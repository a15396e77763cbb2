package io.pgdurable.longpoll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Two observers of the long-poll machinery are each told every moment, and an absent one costs no call. */
class SignalsPairTest {

    @Test
    void both_observers_hear_every_signal_in_order() throws Exception {
        List<String> heard = new ArrayList<>();
        LongPollSignals pair = LongPollSignals.both(recorder("first", heard), recorder("second", heard));
        int signals = 0;
        for (Method m : LongPollSignals.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers())) {
                continue;
            }
            signals++;
            heard.clear();
            m.invoke(pair, arguments(m));
            assertEquals(List.of("first." + m.getName(), "second." + m.getName()), heard,
                    "SignalsPair must forward " + m);
        }
        assertEquals(20, signals, "a new signal needs forwarding in SignalsPair (and this count updated)");
    }

    @Test
    void a_missing_observer_leaves_the_other_alone() {
        LongPollSignals one = new LongPollSignals() {};
        assertSame(one, LongPollSignals.both(LongPollSignals.NONE, one));
        assertSame(one, LongPollSignals.both(one, LongPollSignals.NONE));
        assertSame(one, LongPollSignals.both(one, null));
        assertSame(LongPollSignals.NONE, LongPollSignals.both(null, null));
    }

    /** An observer recording "name.method" for every call, defaults included (a proxy overrides them all). */
    private static LongPollSignals recorder(String name, List<String> heard) {
        return (LongPollSignals) Proxy.newProxyInstance(LongPollSignals.class.getClassLoader(),
                new Class<?>[] {LongPollSignals.class}, (proxy, method, args) -> {
                    heard.add(name + "." + method.getName());
                    return null;
                });
    }

    private static Object[] arguments(Method m) {
        Class<?>[] types = m.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i];
            args[i] = t == int.class ? 1 : t == boolean.class ? Boolean.TRUE : t == QueueKind.class ? QueueKind.WORKER
                    : t == WakeSource.class ? WakeSource.SCAN : t == java.time.Duration.class
                    ? java.time.Duration.ofMillis(1) : t == String.class ? "x" : null;
        }
        return args;
    }
}
