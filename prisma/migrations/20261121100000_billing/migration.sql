-- Billing: reservations and charges are made by three functions, each one atomic round trip. Row locks are always
-- taken in the order Reservation -> ApiKey -> Workspace, so concurrent reserve/settle/release cannot deadlock.
-- Invariant kept by all three: Workspace.balance + Σ held reservations = Σ ledger amounts, and for every key
-- spent + reserved <= spendCap.

-- Caller-chosen request ids may repeat: the charge is unique per reservation instead.
DROP INDEX "LedgerEntry_requestId_kind_key";
ALTER TABLE "LedgerEntry" ADD COLUMN "reservationId" TEXT;
CREATE UNIQUE INDEX "LedgerEntry_reservationId_key" ON "LedgerEntry"("reservationId");
CREATE INDEX "LedgerEntry_requestId_idx" ON "LedgerEntry"("requestId");
DROP INDEX "Reservation_requestId_key";
CREATE INDEX "Reservation_requestId_idx" ON "Reservation"("requestId");

-- Holds p_amount against the key's cap and the workspace balance, or holds nothing and says why.
CREATE FUNCTION gensvc_reserve(p_id TEXT, p_workspace TEXT, p_key TEXT, p_request TEXT, p_amount BIGINT, p_expires TIMESTAMP(3))
RETURNS TEXT LANGUAGE plpgsql AS $$
BEGIN
  IF p_key IS NOT NULL THEN
    UPDATE "ApiKey" SET "reserved" = "reserved" + p_amount
     WHERE "id" = p_key AND "workspaceId" = p_workspace
       AND ("spendCap" IS NULL OR "spent" + "reserved" + p_amount <= "spendCap");
    IF NOT FOUND THEN RETURN 'spending_cap_exhausted'; END IF;
  END IF;
  UPDATE "Workspace" SET "balance" = "balance" - p_amount WHERE "id" = p_workspace AND "balance" >= p_amount;
  IF NOT FOUND THEN
    -- Undo the key's hold; this transaction still holds the key's row lock, so the undo is exact.
    IF p_key IS NOT NULL THEN UPDATE "ApiKey" SET "reserved" = "reserved" - p_amount WHERE "id" = p_key; END IF;
    RETURN 'insufficient_balance';
  END IF;
  INSERT INTO "Reservation" ("id", "workspaceId", "apiKeyId", "requestId", "amount", "state", "expiresAt")
  VALUES (p_id, p_workspace, p_key, p_request, p_amount, 'held', p_expires);
  RETURN 'ok';
END $$;

-- Turns a held reservation into one charge of min(p_cost, held) and returns the rest; a second call finds the
-- reservation no longer held and does nothing (no row returned).
CREATE FUNCTION gensvc_settle(p_reservation TEXT, p_cost BIGINT, p_ledger_id TEXT, p_model TEXT, p_input INTEGER, p_output INTEGER, p_task TEXT)
RETURNS TABLE (charged BIGINT, balance_after BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  r "Reservation"%ROWTYPE;
  c BIGINT;
  b BIGINT;
BEGIN
  UPDATE "Reservation" SET "state" = 'settled' WHERE "id" = p_reservation AND "state" = 'held' RETURNING * INTO r;
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

-- Gives a held reservation back in full; false when it was already settled or released.
CREATE FUNCTION gensvc_release(p_reservation TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE
  r "Reservation"%ROWTYPE;
BEGIN
  UPDATE "Reservation" SET "state" = 'released' WHERE "id" = p_reservation AND "state" = 'held' RETURNING * INTO r;
  IF NOT FOUND THEN RETURN FALSE; END IF;
  IF r."apiKeyId" IS NOT NULL THEN
    UPDATE "ApiKey" SET "reserved" = "reserved" - r."amount" WHERE "id" = r."apiKeyId";
  END IF;
  UPDATE "Workspace" SET "balance" = "balance" + r."amount" WHERE "id" = r."workspaceId";
  RETURN TRUE;
END $$;
