-- Issue 12: the transitions of a task and of its hold find their row by primary key, whatever the planner thinks of
-- the state indexes. Each of these statements names its row by id and also tests its state ("state" = 'held',
-- "status" = 'running'). The state indexes hold few rows by design (Task's status index is partial over queued and
-- running, 20261126060000; most reservations are settled or released), so as soon as the tables are analysed those
-- indexes looked cheaper than the primary key, and the plan each connection keeps read the state's whole range and
-- filtered it by id: every held reservation on each settle, every running task on each result, a read that grows with
-- the tasks in flight and with the dead entries each transition leaves in those indexes until vacuum (measured in
-- bench/task-statements: 25 index entries read per Task probe, 12 per Reservation probe, with 16 callers). The state
-- is compared as text here, which no index serves, so the row is reached by one primary-key probe and its state
-- checked on it (the same idiom as recordDeliveryAttempts' callbackState). Bodies otherwise unchanged.

CREATE OR REPLACE FUNCTION gensvc_settle(p_reservation TEXT, p_cost BIGINT, p_ledger_id TEXT, p_model TEXT, p_input INTEGER, p_output INTEGER, p_task TEXT)
RETURNS TABLE (charged BIGINT, balance_after BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  r "Reservation"%ROWTYPE;
  c BIGINT;
  b BIGINT;
BEGIN
  UPDATE "Reservation" SET "state" = 'settled' WHERE "id" = p_reservation AND "state"::text = 'held' RETURNING * INTO r;
  IF NOT FOUND THEN RETURN; END IF;
  c := LEAST(GREATEST(p_cost, 0), r."amount");
  IF r."apiKeyId" IS NOT NULL THEN
    UPDATE "ApiKey" SET "reserved" = "reserved" - r."amount", "spent" = "spent" + c WHERE "id" = r."apiKeyId";
  END IF;
  UPDATE "Workspace" SET "balance" = "balance" + (r."amount" - c) WHERE "id" = r."workspaceId" RETURNING "balance" INTO b;
  INSERT INTO "LedgerEntry" ("id", "workspaceId", "apiKeyId", "kind", "amount", "balanceAfter", "requestId", "reservationId", "taskId", "model", "inputTokens", "outputTokens")
  VALUES (p_ledger_id, r."workspaceId", r."apiKeyId", 'charge', -c, b, r."requestId", r."id", p_task, p_model, p_input, p_output);
  charged := c;
  balance_after := b;
  RETURN NEXT;
END $$;

CREATE OR REPLACE FUNCTION gensvc_release(p_reservation TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE
  r "Reservation"%ROWTYPE;
BEGIN
  UPDATE "Reservation" SET "state" = 'released' WHERE "id" = p_reservation AND "state"::text = 'held' RETURNING * INTO r;
  IF NOT FOUND THEN RETURN FALSE; END IF;
  IF r."apiKeyId" IS NOT NULL THEN
    UPDATE "ApiKey" SET "reserved" = "reserved" - r."amount" WHERE "id" = r."apiKeyId";
  END IF;
  UPDATE "Workspace" SET "balance" = "balance" + r."amount" WHERE "id" = r."workspaceId";
  RETURN TRUE;
END $$;

CREATE OR REPLACE FUNCTION gensvc_task_record_output(p_task TEXT, p_output JSONB, p_cost BIGINT, p_ledger_id TEXT, p_now TIMESTAMP(3))
RETURNS TABLE (charged BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  c BIGINT;
BEGIN
  SELECT "reservationId", "model" INTO t FROM "Task"
   WHERE "id" = p_task AND "status"::text = 'running' AND "output" IS NULL
  FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  IF t."reservationId" IS NOT NULL THEN
    SELECT s.charged INTO c FROM gensvc_settle(t."reservationId", p_cost, p_ledger_id, t."model", NULL, NULL, p_task) s;
  END IF;
  c := coalesce(c, 0);
  UPDATE "Task" SET "output" = p_output, "cost" = c, "updatedAt" = p_now WHERE "id" = p_task;
  charged := c;
  RETURN NEXT;
END $$;
