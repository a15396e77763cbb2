package io.pgdurable.postgres.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Runs the conformance module {@link DeletionTests} against the PostgreSQL provider, and the provider's own
 * {@link ProviderAdmin#deleteInstancesKeepingChildren}, which the contract does not have.
 */
class PgDeletionTest extends DeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }

    /** The deleted instance goes alone; its children become roots, the rest of the family is untouched. */
    @Test
    void deleting_a_parent_keeping_its_children_makes_them_roots() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        List<String> family = createFourLevelFamily(p, "keep-root");
        String root = family.get(0);
        String child1 = family.get(1);
        String child2 = family.get(2);
        String grandchild = family.get(3);

        assertResult(admin.deleteInstancesKeepingChildren(List.of(root), false), 1, 1, 1, 0, "the root alone");
        assertGone(admin, root, "deleted keeping its children");
        assertEquals(Optional.empty(), assertExists(admin, child1).parentInstanceId(), "child1 is a root now");
        assertEquals(Optional.empty(), assertExists(admin, child2).parentInstanceId(), "child2 is a root now");
        assertEquals(Optional.of(child2), assertExists(admin, grandchild).parentInstanceId(),
                "the grandchild keeps its parent");
        assertEquals(List.of(child2, grandchild), admin.getInstanceTree(child2).allIds());
        assertEquals(1, p.read(child1).size(), "child1's history is kept");

        // A root now, so it can be deleted on its own (deleteInstance refuses sub-orchestrations).
        assertResult(admin.deleteInstance(child1, false), 1, 1, 1, 0, "the former child, now a root");
        assertResult(admin.deleteInstancesKeepingChildren(List.of(child2, grandchild), false), 2, 2, 2, 0,
                "a whole subtree: nothing to keep");
        assertGone(admin, grandchild, "deleted with its parent");
    }

    /** The running check still applies; a refused call changes no parent link. */
    @Test
    void deleting_a_running_parent_keeping_its_children_needs_force() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String root = "keep-running-root";
        String child = root + "::sub::2";
        createInstanceWithStatus(p, root, null, null, null);
        createCompletedChild(p, child, root);

        ProviderException e = expectPermanentError("deleting a running parent without force",
                () -> admin.deleteInstancesKeepingChildren(List.of(root), false));
        assertTrue(lower(e).contains("running"), e.getMessage());
        assertExists(admin, root);
        assertEquals(Optional.of(root), assertExists(admin, child).parentInstanceId(), "rolled back");

        assertResult(admin.deleteInstancesKeepingChildren(List.of(root), true), 1, 1, 1, 0, "forced");
        assertEquals(Optional.empty(), assertExists(admin, child).parentInstanceId());
        // The contract's own call still refuses what would orphan a child.
        createCompleted(p, root + "-2");
        createCompletedChild(p, child + "-2", root + "-2");
        expectPermanentError("deleteInstancesAtomic of a parent alone",
                () -> admin.deleteInstancesAtomic(List.of(root + "-2"), true));
    }

    @Test
    void an_empty_or_missing_id_list_is_handled() {
        ProviderAdmin admin = admin(newProvider());
        assertResult(admin.deleteInstancesKeepingChildren(List.of(), false), 0, 0, 0, 0, "empty list");
        ProviderException e = expectPermanentError("a null id list",
                () -> admin.deleteInstancesKeepingChildren(null, false));
        assertTrue(e.getMessage().contains("ids"), e.getMessage());
    }
}
