-- Issue 12: Postgres's cost per task. Every transition moves "updatedAt" (and most move status or callbackState), so
-- no Task update is HOT and each new row version went into every index of the table. The two indexes the
-- reconcilers sweep now hold only the rows a sweep can want, so a task that has finished leaves the status index, and
-- a delivered one leaves the callbackState index:
--   - status: queued and running (taskRepository.staleInProvider, staleInArchive; the channel and model deletes'
--     count of live tasks);
--   - callbackState: pending (the dispatcher's reconciler, stalePendingDeliveries) and parked (gensvc_count_parked,
--     the parked-deliveries gauge, read at every scrape).
-- Prisma's schema cannot say "partial": prisma/schema.prisma keeps the same names and columns, with a note.
DROP INDEX "Task_status_updatedAt_idx";
CREATE INDEX "Task_status_updatedAt_idx" ON "Task"("status", "updatedAt") WHERE "status" IN ('queued', 'running');
DROP INDEX "Task_callbackState_updatedAt_idx";
CREATE INDEX "Task_callbackState_updatedAt_idx" ON "Task"("callbackState", "updatedAt") WHERE "callbackState" IN ('pending', 'parked');

-- The provider's result: one new version of the task row instead of two. The row is locked first (FOR UPDATE, which
-- re-checks the conditions on the newest version after any wait, as the UPDATE did), then the reservation
-- (gensvc_settle): the lock order of every transition, so it cannot deadlock with a cancel or a failure. The output
-- and the cost are then written together, once the charge is known.
CREATE OR REPLACE FUNCTION gensvc_task_record_output(p_task TEXT, p_output JSONB, p_cost BIGINT, p_ledger_id TEXT, p_now TIMESTAMP(3))
RETURNS TABLE (charged BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  c BIGINT;
BEGIN
  SELECT "reservationId", "model" INTO t FROM "Task"
   WHERE "id" = p_task AND "status" = 'running' AND "output" IS NULL
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
