-- One page of instance ids, for the management listings that page (the Durable Task sidecar's instance and entity
-- queries). Before this, each page listed every instance of the hub and dropped all but one page of them, so paging
-- through a hub cost a number of rows quadratic in its size.
--
-- The page is read in the primary key's order (the database's collation) from just after p_after, through the
-- primary key index; the prefix is a filter, not a range, because under a linguistic collation the ids that start
-- with a prefix need not sort next to each other. Paging a whole hub therefore reads each id about once. A LIMIT of
-- NULL would read everything: the caller gives one.
--
-- Adds a function only; nodes of earlier versions work against this schema as before.

CREATE FUNCTION ${schema}.list_instances_after(p_after TEXT, p_prefix TEXT, p_limit INT)
RETURNS TABLE (instance_id TEXT)
LANGUAGE sql STABLE AS $$
    SELECT i.instance_id
      FROM ${schema}.instances i
     WHERE i.instance_id > p_after
       AND starts_with(i.instance_id, p_prefix)
     ORDER BY i.instance_id
     LIMIT p_limit;
$$;
