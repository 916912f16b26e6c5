-- Issue 12: task creations written in groups. Every creation holds its price on its key's row and its workspace's
-- row (gensvc_reserve) and keeps both locked until it commits; creations of one key queued on those rows, one commit
-- (one WAL flush) each. The edge now sends the creations of one key that arrive while its previous group is in flight
-- as one call of this function: one transaction, one commit, the rows locked once. Each item is held and written as
-- the single creation was (gensvc_reserve, then the Task row only when the hold was made), in the order given, so a
-- cap or a balance admits the same items as the same creations one after another would; an item refused answers its
-- outcome and holds nothing. Row locks stay in the order ApiKey -> Workspace: a group has one key, of one workspace.
--
-- p_items: a JSON array of {reservationId, workspaceId, apiKeyId, requestId, amount (text), holdExpires, id, model,
-- operation, input (JSON), callbackUrl, deadlineAt} (times as ISO strings in UTC). Answers one row per item, in order:
-- the hold's outcome and, when the task was written, the columns it took from their defaults.
CREATE FUNCTION gensvc_task_create_many(p_items JSONB, p_now TIMESTAMP(3))
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
                               "reservationId", "reserved", "deadlineAt", "createdAt", "updatedAt")
      VALUES (i ->> 'id', i ->> 'workspaceId', i ->> 'apiKeyId', i ->> 'requestId', i ->> 'model', i ->> 'operation', i -> 'input',
              i ->> 'callbackUrl', i ->> 'reservationId', (i ->> 'amount')::bigint, (i ->> 'deadlineAt')::timestamp(3), p_now, p_now)
      RETURNING t."status", t."attempts", t."callbackState", t."callbackRoundStart"
      INTO status, attempts, "callbackState", "callbackRoundStart";
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;
