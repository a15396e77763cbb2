package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The runtime-status filter of a query, a listing or a purge. No status given matches every instance. A status this
 * protocol does not know (a newer SDK's, or a stray number) matches no instance, since none can have it; dropping it
 * instead would widen the filter, and a purge naming only such a status would purge every finished instance.
 */
final class StatusFilter {
    private final Set<OrchestrationStatus> statuses = EnumSet.noneOf(OrchestrationStatus.class);
    private final boolean given;

    private StatusFilter(List<OrchestrationStatus> list) {
        this.given = !list.isEmpty();
        for (OrchestrationStatus s : list) {
            if (s != OrchestrationStatus.UNRECOGNIZED) {
                statuses.add(s);
            }
        }
    }

    static StatusFilter of(List<OrchestrationStatus> list) {
        return new StatusFilter(list);
    }

    boolean matches(OrchestrationStatus status) {
        return !given || statuses.contains(status);
    }
}
