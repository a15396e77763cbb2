package io.pgdurable.postgres.acks;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresTestFactory;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkItem;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The conformance kit's factory with every {@code ackWorkItem} of the tests sent through one of the round-trip
 * saving operations instead, so the worker-queue modules prove that those keep {@code ackWorkItem}'s contract
 * (outcomes, lease checks, cancellation, sessions, poison handling):
 * <ul>
 *   <li>{@link Via#ACK_LIST}: {@code ackWorkItems} with a list of one, its result turned back into the exception;</li>
 *   <li>{@link Via#ACK_AND_FETCH_NEXT}: {@code ackWorkItemAndFetchNext} claiming any non-session item; a claimed
 *       item is abandoned again at once with its attempt not counted, so the test sees the queue as it left it.</li>
 * </ul>
 */
public class AckViaTestFactory extends PostgresTestFactory {
    /** Which operation stands in for {@code ackWorkItem}. */
    public enum Via { ACK_LIST, ACK_AND_FETCH_NEXT }

    private final Via via;

    public AckViaTestFactory(Via via) {
        this.via = via;
    }

    @Override
    protected OrchestrationProvider wrap(PostgresProvider provider) {
        return (OrchestrationProvider) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {OrchestrationProvider.class}, (proxy, method, args) -> {
                    if (method.getName().equals("ackWorkItem") && args.length == 2) {
                        ack(provider, (String) args[0], (WorkItem) args[1]);
                        return null;
                    }
                    return forward(provider, method, args);
                });
    }

    private void ack(PostgresProvider provider, String token, WorkItem completion) {
        if (via == Via.ACK_LIST) {
            AckResult r = provider.ackWorkItems(List.of(new WorkAck(token, completion))).get(0);
            if (!r.isAcked()) {
                throw r.error();
            }
            return;
        }
        Optional<FetchedWorkItem> next = provider.ackWorkItemAndFetchNext(token, completion, Duration.ofMinutes(1),
                null, TagFilter.any());
        next.ifPresent(n -> provider.abandonWorkItem(n.lockToken(), null, true));
    }

    private static Object forward(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
