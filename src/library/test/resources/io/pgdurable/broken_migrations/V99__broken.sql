-- A migration that fails half way: the table must not survive and the ledger must not advance.
CREATE TABLE ${schema}.created_before_failure (id INT);
SELECT 1 / 0;
