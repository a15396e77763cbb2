package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.conformance.ConformanceTestBase;
import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.DeleteInstanceResult;
import io.pgdurable.spi.ProviderAdmin.InstanceInfo;
import io.pgdurable.spi.ProviderException;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The provider's own {@link ProviderAdmin#deleteInstancesKeepingChildren}, which the contract does not
 * have, on the conformance kit's fixtures and the deletion module's.
 */
class DeleteKeepingChildrenTest extends ConformanceTestBase {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }

    /** The deleted instance goes alone; its children become roots, the rest of the family is untouched. */
    @Test
    void deleting_a_parent_keeping_its_children_makes_them_roots() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = Fixtures.admin(p);
        List<String> family = Fixtures.createFourLevelFamily(p, "keep-root");
        String root = family.get(0);
        String child1 = family.get(1);
        String child2 = family.get(2);
        String grandchild = family.get(3);

        Fixtures.assertResult(admin.deleteInstancesKeepingChildren(List.of(root), false), 1, 1, 1, 0,
                "the root alone");
        Fixtures.assertGone(admin, root, "deleted keeping its children");
        assertEquals(Optional.empty(), Fixtures.assertExists(admin, child1).parentInstanceId(),
                "child1 is a root now");
        assertEquals(Optional.empty(), Fixtures.assertExists(admin, child2).parentInstanceId(),
                "child2 is a root now");
        assertEquals(Optional.of(child2), Fixtures.assertExists(admin, grandchild).parentInstanceId(),
                "the grandchild keeps its parent");
        assertEquals(List.of(child2, grandchild), admin.getInstanceTree(child2).allIds());
        assertEquals(1, p.read(child1).size(), "child1's history is kept");

        // A root now, so it can be deleted on its own (deleteInstance refuses sub-orchestrations).
        Fixtures.assertResult(admin.deleteInstance(child1, false), 1, 1, 1, 0, "the former child, now a root");
        Fixtures.assertResult(admin.deleteInstancesKeepingChildren(List.of(child2, grandchild), false),
                2, 2, 2, 0, "a whole subtree: nothing to keep");
        Fixtures.assertGone(admin, grandchild, "deleted with its parent");
    }

    /** The running check still applies; a refused call changes no parent link. */
    @Test
    void deleting_a_running_parent_keeping_its_children_needs_force() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = Fixtures.admin(p);
        String root = "keep-running-root";
        String child = root + "::sub::2";
        Fixtures.createInstanceWithStatus(p, root, null, null, null);
        Fixtures.createCompletedChild(p, child, root);

        ProviderException e = expectPermanentError("deleting a running parent without force",
                () -> admin.deleteInstancesKeepingChildren(List.of(root), false));
        assertTrue(Fixtures.lower(e).contains("running"), e.getMessage());
        Fixtures.assertExists(admin, root);
        assertEquals(Optional.of(root), Fixtures.assertExists(admin, child).parentInstanceId(), "rolled back");

        Fixtures.assertResult(admin.deleteInstancesKeepingChildren(List.of(root), true), 1, 1, 1, 0, "forced");
        assertEquals(Optional.empty(), Fixtures.assertExists(admin, child).parentInstanceId());
        // The contract's own call still refuses what would orphan a child.
        Fixtures.createCompleted(p, root + "-2");
        Fixtures.createCompletedChild(p, child + "-2", root + "-2");
        expectPermanentError("deleteInstancesAtomic of a parent alone",
                () -> admin.deleteInstancesAtomic(List.of(root + "-2"), true));
    }

    @Test
    void an_empty_or_missing_id_list_is_handled() {
        ProviderAdmin admin = Fixtures.admin(newProvider());
        Fixtures.assertResult(admin.deleteInstancesKeepingChildren(List.of(), false), 0, 0, 0, 0, "empty list");
        ProviderException e = expectPermanentError("a null id list",
                () -> admin.deleteInstancesKeepingChildren(null, false));
        assertTrue(e.getMessage().contains("ids"), e.getMessage());
    }

    /**
     * The deletion module's fixtures, which it offers its subclasses only. Abstract, so that none of the module's
     * tests runs here: the module runs in its binding, PgDeletionTest.
     */
    private abstract static class Fixtures extends DeletionTests {
        protected static ProviderAdmin admin(OrchestrationProvider p) {
            return DeletionTests.admin(p);
        }

        protected static List<String> createFourLevelFamily(OrchestrationProvider p, String root) {
            return DeletionTests.createFourLevelFamily(p, root);
        }

        protected static void createInstanceWithStatus(OrchestrationProvider p, String instance, String parent,
                                                       String status, String output) {
            DeletionTests.createInstanceWithStatus(p, instance, parent, status, output);
        }

        protected static void createCompleted(OrchestrationProvider p, String instance) {
            DeletionTests.createCompleted(p, instance);
        }

        protected static void createCompletedChild(OrchestrationProvider p, String instance, String parent) {
            DeletionTests.createCompletedChild(p, instance, parent);
        }

        protected static InstanceInfo assertExists(ProviderAdmin admin, String instance) {
            return DeletionTests.assertExists(admin, instance);
        }

        protected static void assertGone(ProviderAdmin admin, String instance, String why) {
            DeletionTests.assertGone(admin, instance, why);
        }

        protected static void assertResult(DeleteInstanceResult r, long instances, long executions, long events,
                                           long queueMessages, String why) {
            DeletionTests.assertResult(r, instances, executions, events, queueMessages, why);
        }

        protected static String lower(Throwable e) {
            return DeletionTests.lower(e);
        }
    }
}
