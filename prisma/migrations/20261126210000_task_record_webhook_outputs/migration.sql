-- Issue 12: provider webhooks' results recorded in groups. A webhook's result settles the task's hold
-- (gensvc_task_record_webhook_output -> gensvc_task_record_output -> gensvc_settle), which locks the task's key row
-- and workspace row until it commits: every task of one key queued on those rows, one commit (one WAL flush) each,
-- and with creations grouped (migration 20261126200000) these waits were the largest share of the sampled active
-- backends under bench/tasks (Lock/transactionid and Lock/tuple on this statement). The edge now sends the webhooks'
-- results that arrive while its previous group is in flight as one call of this function: one transaction, one
-- commit, each item recorded by gensvc_task_record_webhook_output as alone, in the order given.
--
-- A group may name tasks of several keys and workspaces, so before any item it locks every row its items may write,
-- each kind in id order and the kinds in the order every other writer takes them: Task, Reservation, ApiKey,
-- Workspace (gensvc_reserve: ApiKey -> Workspace; settle and release: Reservation -> ApiKey -> Workspace, after the
-- Task row; gensvc_lease_charge: leases in id order, then keys in id order). Once it holds a Workspace row it waits
-- for nothing more, so no lock cycle can form with them. Each lock is the one its item's statements take: FOR UPDATE
-- on the Task row (gensvc_task_record_output's), FOR NO KEY UPDATE on the others (their UPDATEs'), which foreign-key
-- checks (KEY SHARE) do not wait for.
--
-- p_items: a JSON array of {task, upstreamId, provider, outputs, ledgerId}; p_kinds as gensvc_task_record_webhook_output.
-- Answers one row per item, in order (the caller numbers them WITH ORDINALITY).
CREATE FUNCTION gensvc_task_record_webhook_outputs(p_items JSONB, p_kinds JSONB, p_now TIMESTAMP(3))
RETURNS TABLE (outcome TEXT, kind TEXT, charged BIGINT, "workspaceId" TEXT, model TEXT, attempts INTEGER) LANGUAGE plpgsql AS $$
DECLARE
  i JSONB;
  ids TEXT[];
BEGIN
  ids := ARRAY(SELECT DISTINCT x ->> 'task' FROM jsonb_array_elements(p_items) x);
  PERFORM 1 FROM "Task" t WHERE t."id" = ANY(ids) ORDER BY t."id" FOR UPDATE;
  PERFORM 1 FROM "Reservation" r WHERE r."id" IN (SELECT t."reservationId" FROM "Task" t WHERE t."id" = ANY(ids))
    ORDER BY r."id" FOR NO KEY UPDATE;
  PERFORM 1 FROM "ApiKey" k WHERE k."id" IN (SELECT t."apiKeyId" FROM "Task" t WHERE t."id" = ANY(ids))
    ORDER BY k."id" FOR NO KEY UPDATE;
  PERFORM 1 FROM "Workspace" w WHERE w."id" IN (SELECT t."workspaceId" FROM "Task" t WHERE t."id" = ANY(ids))
    ORDER BY w."id" FOR NO KEY UPDATE;
  FOR i IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
    RETURN QUERY SELECT * FROM gensvc_task_record_webhook_output(i ->> 'task', i ->> 'upstreamId', i ->> 'provider', p_kinds,
                                                                 i -> 'outputs', i ->> 'ledgerId', p_now);
  END LOOP;
END $$;
