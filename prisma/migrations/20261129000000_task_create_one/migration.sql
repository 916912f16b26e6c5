-- A task creation holds its price and writes the queued task in one statement, one creation per call: the hold
-- (gensvc_reserve), then the Task row only when the hold was made, so both are written or neither. Replaces the
-- grouped form (gensvc_task_create_many). Answers the hold's outcome and, when the task was written, the columns it
-- took from their defaults.
CREATE FUNCTION gensvc_task_create(p_reservation TEXT, p_workspace TEXT, p_key TEXT, p_request TEXT,
                                   p_amount BIGINT, p_hold_expires TIMESTAMP(3), p_id TEXT, p_model TEXT,
                                   p_operation TEXT, p_input JSONB, p_callback_url TEXT, p_deadline TIMESTAMP(3),
                                   p_now TIMESTAMP(3))
RETURNS TABLE (hold TEXT, status "TaskStatus", attempts INTEGER, "callbackState" "CallbackState",
               "callbackRoundStart" INTEGER)
LANGUAGE plpgsql AS $$
BEGIN
  hold := gensvc_reserve(p_reservation, p_workspace, p_key, p_request, p_amount, p_hold_expires);
  IF hold = 'ok' THEN
    INSERT INTO "Task" AS t ("id", "workspaceId", "apiKeyId", "requestId", "model", "operation", "input", "callbackUrl",
                             "reservationId", "reserved", "deadlineAt", "createdAt", "updatedAt")
    VALUES (p_id, p_workspace, p_key, p_request, p_model, p_operation, p_input, p_callback_url, p_reservation, p_amount,
            p_deadline, p_now, p_now)
    RETURNING t."status", t."attempts", t."callbackState", t."callbackRoundStart"
    INTO status, attempts, "callbackState", "callbackRoundStart";
  END IF;
  RETURN NEXT;
END $$;

DROP FUNCTION gensvc_task_create_many(JSONB, TIMESTAMP(3));
