-- Purging an instance without its sub-orchestrations (issue 15: the Durable Task SDKs' non-recursive purge).
--
-- delete_instances_atomic refuses a delete set that leaves a child whose parent is deleted (PD002), so nothing ever
-- points at an instance that is gone. A purge that keeps the children keeps that rule by making them roots first:
-- a kept child's parent_instance_id is cleared in the same transaction as its parent's deletion, so it stays
-- listable, queryable and deletable on its own (deleteInstance refuses sub-orchestrations). Its history still
-- names the parent in its start event; a result it later sends there finds no instance and is dropped like any
-- message for an instance that does not exist.
--
-- Everything else is delete_instances_atomic's: the running check without force, the row locks, the counts. The
-- instance rows are locked before the children are updated, in the order delete_instances_atomic locks them, so a
-- purge and a concurrent delete of the same instances wait for each other instead of deadlocking.
CREATE FUNCTION ${schema}.delete_instances_keeping_children(p_ids TEXT[], p_force BOOLEAN)
RETURNS TABLE (instances_deleted BIGINT, executions_deleted BIGINT, events_deleted BIGINT,
               queue_messages_deleted BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM ${schema}.instances i WHERE i.instance_id = ANY (p_ids) ORDER BY i.instance_id FOR UPDATE;
    UPDATE ${schema}.instances c
       SET parent_instance_id = NULL
     WHERE c.parent_instance_id = ANY (p_ids) AND NOT (c.instance_id = ANY (p_ids));
    RETURN QUERY SELECT * FROM ${schema}.delete_instances_atomic(p_ids, p_force);
END
$$;
