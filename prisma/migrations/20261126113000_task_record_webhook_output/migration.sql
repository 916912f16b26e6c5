-- Issue 12: a provider webhook's result recorded in one statement. The edge's provider-webhooks route read the task
-- (one statement) to check that the webhook is this task's and to build its output entries, then recorded the result
-- (gensvc_task_record_output, a second): two Postgres round trips per task on the success path. Here the checks run on
-- the row itself and the result is recorded by the same function, in one round trip.
--
-- The checks, in the route's order: the task exists, its recorded provider job id is the one the provider signed, it
-- has a channel ('not_this' otherwise: the route brings the poll forward); it is running with no output ('done'
-- otherwise: a replay, or the poll was first); its channel is of the webhook's provider ('not_this'). The output is
-- the entries the caller built for the task's output kind: p_outputs maps a kind to its entries and p_kinds an
-- operation to its kind (both built by the caller from @gensvc/contracts, so no output shape is written here); when
-- p_outputs has no entries for the task's kind (the caller could not build them without the row), nothing is written
-- and the answer is 'needs_row'. The write itself is gensvc_task_record_output's, conditional as always (running,
-- output null, under the row lock): 'moved_on' when the task changed between the read and the write. The charge is
-- the task's hold, as the poll's recording charges it.
CREATE FUNCTION gensvc_task_record_webhook_output(p_task TEXT, p_upstream_id TEXT, p_provider TEXT, p_kinds JSONB, p_outputs JSONB, p_ledger_id TEXT, p_now TIMESTAMP(3))
RETURNS TABLE (outcome TEXT, kind TEXT, charged BIGINT, "workspaceId" TEXT, model TEXT, attempts INTEGER) LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  o JSONB;
BEGIN
  SELECT x."status"::text AS status, x."output" IS NULL AS no_output, x."upstreamId", x."channelId", x."operation", x."reserved",
         x."workspaceId", x."model", x."attempts", c."kind"::text AS channel_kind
    INTO t FROM "Task" x LEFT JOIN "Channel" c ON c."id" = x."channelId" WHERE x."id" = p_task;
  IF NOT FOUND OR t."upstreamId" IS DISTINCT FROM p_upstream_id OR t."channelId" IS NULL THEN
    outcome := 'not_this'; RETURN NEXT; RETURN;
  END IF;
  "workspaceId" := t."workspaceId"; model := t."model"; attempts := t."attempts";
  IF t.status <> 'running' OR NOT t.no_output THEN outcome := 'done'; RETURN NEXT; RETURN; END IF;
  IF t.channel_kind IS DISTINCT FROM p_provider THEN outcome := 'not_this'; RETURN NEXT; RETURN; END IF;
  kind := coalesce(p_kinds ->> t."operation", 'image');
  o := p_outputs -> kind;
  IF o IS NULL THEN outcome := 'needs_row'; RETURN NEXT; RETURN; END IF;
  SELECT r.charged INTO charged FROM gensvc_task_record_output(p_task, o, t."reserved", p_ledger_id, p_now) r;
  outcome := CASE WHEN FOUND THEN 'recorded' ELSE 'moved_on' END;
  RETURN NEXT;
END $$;
