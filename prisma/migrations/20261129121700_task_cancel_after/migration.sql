-- The caller's deadline of a task (deadline_seconds, or the Cancel-After header): past it a task still live is
-- canceled with deadline_exceeded and its hold released. Null: no deadline but the service's own (deadlineAt).
ALTER TABLE "Task" ADD COLUMN "cancelAfter" TIMESTAMP(3);

-- Creations carry it: the same function, each item's optional "cancelAfter" (an ISO string in UTC, or null) written
-- beside "deadlineAt".
CREATE OR REPLACE FUNCTION gensvc_task_create_many(p_items JSONB, p_now TIMESTAMP(3))
RETURNS TABLE (hold TEXT, status "TaskStatus", attempts INTEGER, "callbackState" "CallbackState", "callbackRoundStart" INTEGER)
LANGUAGE plpgsql AS $$
DECLARE
  i JSONB;
BEGIN
  FOR i IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
    hold := gensvc_reserve(i ->> 'reservationId', i ->> 'workspaceId', i ->> 'apiKeyId', i ->> 'requestId',
                           (i ->> 'amount')::bigint, (i ->> 'holdExpires')::timestamp(3));
    status := NULL; attempts := NULL; "callbackState" := NULL; "callbackRoundStart" := NULL;
    IF hold = 'ok' THEN
      INSERT INTO "Task" AS t ("id", "workspaceId", "apiKeyId", "requestId", "model", "operation", "input", "callbackUrl",
                               "reservationId", "reserved", "deadlineAt", "cancelAfter", "createdAt", "updatedAt")
      VALUES (i ->> 'id', i ->> 'workspaceId', i ->> 'apiKeyId', i ->> 'requestId', i ->> 'model', i ->> 'operation', i -> 'input',
              i ->> 'callbackUrl', i ->> 'reservationId', (i ->> 'amount')::bigint, (i ->> 'deadlineAt')::timestamp(3),
              (i ->> 'cancelAfter')::timestamp(3), p_now, p_now)
      RETURNING t."status", t."attempts", t."callbackState", t."callbackRoundStart"
      INTO status, attempts, "callbackState", "callbackRoundStart";
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;
