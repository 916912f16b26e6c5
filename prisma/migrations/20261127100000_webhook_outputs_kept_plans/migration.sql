-- Issue 12: the webhooks' group function (gensvc_task_record_webhook_outputs, 20261126210000) planned its four lock
-- statements again on every call. Each named its rows by `= ANY(ids)` of a plpgsql array, and for such a parameter
-- the plan cache's cost comparison kept choosing a plan made for the call's values over the one it keeps, so every
-- group paid four plannings (pg_stat_statements on bench/tasks' Postgres: 51 plans in 50 calls of each, ~0.85 ms of
-- planning per call against ~0.6 ms of execution).
--
-- The function now runs with plan_cache_mode = force_generic_plan (for the call and what it calls, restored when it
-- returns): each statement is planned once per connection. A kept plan cannot see the call's values, so the locks are
-- written for it: the Task rows are locked and read once, the ids of their holds, keys and workspaces gathered as they
-- are, and each of those tables is then locked by `id = ANY(ARRAY(...))` of those ids, which its primary key serves
-- (a join to the Task rows, as before, could be kept as a hash join over the whole table: it was, in a test of a
-- thousand settled holds). The order of the locks is unchanged (Task, Reservation, ApiKey, Workspace, each in id
-- order), and so is the rest of the body; the items' own statements were written to be run from kept plans
-- (20261126090000).
CREATE OR REPLACE FUNCTION gensvc_task_record_webhook_outputs(p_items JSONB, p_kinds JSONB, p_now TIMESTAMP(3))
RETURNS TABLE (outcome TEXT, kind TEXT, charged BIGINT, "workspaceId" TEXT, model TEXT, attempts INTEGER) LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  i JSONB;
  ids TEXT[];
  holds TEXT[];
  keys TEXT[];
  workspaces TEXT[];
BEGIN
  ids := ARRAY(SELECT DISTINCT x ->> 'task' FROM jsonb_array_elements(p_items) x);
  SELECT array_agg(t."reservationId"), array_agg(t."apiKeyId"), array_agg(t."workspaceId") INTO holds, keys, workspaces
  FROM (SELECT t."reservationId", t."apiKeyId", t."workspaceId" FROM "Task" t WHERE t."id" = ANY(ids) ORDER BY t."id" FOR UPDATE) t;
  PERFORM 1 FROM "Reservation" r WHERE r."id" = ANY(ARRAY(SELECT unnest(holds))) ORDER BY r."id" FOR NO KEY UPDATE;
  PERFORM 1 FROM "ApiKey" k WHERE k."id" = ANY(ARRAY(SELECT unnest(keys))) ORDER BY k."id" FOR NO KEY UPDATE;
  PERFORM 1 FROM "Workspace" w WHERE w."id" = ANY(ARRAY(SELECT unnest(workspaces))) ORDER BY w."id" FOR NO KEY UPDATE;
  FOR i IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
    RETURN QUERY SELECT * FROM gensvc_task_record_webhook_output(i ->> 'task', i ->> 'upstreamId', i ->> 'provider', p_kinds,
                                                                 i -> 'outputs', i ->> 'ledgerId', p_now);
  END LOOP;
END $$;
