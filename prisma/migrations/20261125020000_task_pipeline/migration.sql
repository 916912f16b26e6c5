-- Issue 12: the provider's result recorded and its price settled in one round trip (no interactive transaction).
-- The task row is locked first (its UPDATE), then the reservation (gensvc_settle): the same order as a cancel or a
-- failure (taskRepository.finish), so the two never deadlock. Returns nothing when the task was not running without
-- an output (canceled, failed or recorded by another run meanwhile); else what was charged (0 when the hold was
-- already gone).
CREATE FUNCTION gensvc_task_record_output(p_task TEXT, p_output JSONB, p_cost BIGINT, p_ledger_id TEXT, p_now TIMESTAMP(3))
RETURNS TABLE (charged BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  c BIGINT;
BEGIN
  UPDATE "Task" SET "output" = p_output, "updatedAt" = p_now
   WHERE "id" = p_task AND "status" = 'running' AND "output" IS NULL
  RETURNING "reservationId", "model" INTO t;
  IF NOT FOUND THEN RETURN; END IF;
  IF t."reservationId" IS NOT NULL THEN
    SELECT s.charged INTO c FROM gensvc_settle(t."reservationId", p_cost, p_ledger_id, t."model", NULL, NULL, p_task) s;
  END IF;
  c := coalesce(c, 0);
  UPDATE "Task" SET "cost" = c WHERE "id" = p_task;
  charged := c;
  RETURN NEXT;
END $$;
