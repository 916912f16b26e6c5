-- Budget leases (issue 11): an edge replica holds spend in blocks and reserves its calls against them in memory.
-- A lease is a Reservation with lease = true: its amount is what it still holds (money moved out of the balance and
-- onto the key's reserved, not yet charged). Charges against it are written in batches (group commit) by
-- gensvc_lease_charge, which moves each charge from the lease to the ledger; gensvc_lease_return gives part or all of
-- what is left back. gensvc_release (a dead replica's lease, found by its expiry) gives back whatever it still holds.
-- The invariant stays: Workspace.balance + Σ held amounts = Σ ledger, and for every key spent + reserved <= spendCap.

ALTER TABLE "Reservation" ADD COLUMN "lease" BOOLEAN NOT NULL DEFAULT false;

-- Moves up to p_want (at least p_min) from the key's cap and the workspace's balance into a new lease: as much as
-- both allow. Row locks in the order ApiKey -> Workspace, as gensvc_reserve.
CREATE FUNCTION gensvc_lease(p_id TEXT, p_workspace TEXT, p_key TEXT, p_request TEXT, p_min BIGINT, p_want BIGINT, p_expires TIMESTAMP(3))
RETURNS TABLE (outcome TEXT, amount BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  cap_room BIGINT;
  bal BIGINT;
  a BIGINT;
BEGIN
  a := p_want;
  IF p_key IS NOT NULL THEN
    SELECT CASE WHEN "spendCap" IS NULL THEN p_want ELSE "spendCap" - "spent" - "reserved" END INTO cap_room
      FROM "ApiKey" WHERE "id" = p_key AND "workspaceId" = p_workspace FOR UPDATE;
    IF NOT FOUND OR cap_room < p_min THEN outcome := 'spending_cap_exhausted'; amount := 0; RETURN NEXT; RETURN; END IF;
    a := LEAST(a, cap_room);
  END IF;
  SELECT "balance" INTO bal FROM "Workspace" WHERE "id" = p_workspace FOR UPDATE;
  IF NOT FOUND OR bal < p_min THEN outcome := 'insufficient_balance'; amount := 0; RETURN NEXT; RETURN; END IF;
  a := LEAST(a, bal);
  IF p_key IS NOT NULL THEN UPDATE "ApiKey" SET "reserved" = "reserved" + a WHERE "id" = p_key; END IF;
  UPDATE "Workspace" SET "balance" = "balance" - a WHERE "id" = p_workspace;
  INSERT INTO "Reservation" ("id", "workspaceId", "apiKeyId", "requestId", "amount", "state", "expiresAt", "lease")
  VALUES (p_id, p_workspace, p_key, p_request, a, 'held', p_expires, true);
  outcome := 'ok'; amount := a; RETURN NEXT;
END $$;

-- Charges a batch of calls against their leases, one ledger entry each, and pushes the expiry of every lease it
-- touches to p_expires. Each entry is {id, lease, cost, request, model, input, output}; `id` is the ledger entry's id,
-- chosen by the caller, so a batch retried after an unknown outcome charges nothing twice. An entry whose lease no
-- longer holds its cost (released as dead, or already returned) is not charged. Locks: every lease row first (in id
-- order), then keys (in id order); the workspace row is not locked (a lease charge does not change the balance), so
-- no lock cycle can form with gensvc_reserve / settle / release, which lock Reservation -> ApiKey -> Workspace.
CREATE FUNCTION gensvc_lease_charge(p_entries JSONB, p_expires TIMESTAMP(3))
RETURNS TABLE (id TEXT, charged BOOLEAN) LANGUAGE plpgsql AS $$
DECLARE
  e RECORD;
  r "Reservation"%ROWTYPE;
  c BIGINT;
  fresh INTEGER;
BEGIN
  PERFORM 1 FROM "Reservation" WHERE "Reservation"."id" IN (SELECT DISTINCT x->>'lease' FROM jsonb_array_elements(p_entries) x)
    ORDER BY "Reservation"."id" FOR UPDATE;
  PERFORM 1 FROM "ApiKey" WHERE "ApiKey"."id" IN (
      SELECT DISTINCT res."apiKeyId" FROM "Reservation" res
       WHERE res."id" IN (SELECT x->>'lease' FROM jsonb_array_elements(p_entries) x) AND res."apiKeyId" IS NOT NULL)
    ORDER BY "ApiKey"."id" FOR UPDATE;
  FOR e IN SELECT x->>'id' AS eid, x->>'lease' AS lease, (x->>'cost')::BIGINT AS cost, x->>'request' AS request,
                  x->>'model' AS model, (x->>'input')::INTEGER AS input, (x->>'output')::INTEGER AS output
             FROM jsonb_array_elements(p_entries) x
  LOOP
    id := e.eid;
    SELECT * INTO r FROM "Reservation" WHERE "Reservation"."id" = e.lease;
    c := GREATEST(e.cost, 0);
    IF NOT FOUND OR r."state" <> 'held' OR r."amount" < c THEN
      -- Charged before (a retried batch) if its entry exists; otherwise the lease cannot pay for it.
      charged := EXISTS (SELECT 1 FROM "LedgerEntry" WHERE "LedgerEntry"."id" = e.eid);
      RETURN NEXT;
      CONTINUE;
    END IF;
    INSERT INTO "LedgerEntry" ("id", "workspaceId", "apiKeyId", "kind", "amount", "balanceAfter", "requestId", "model", "inputTokens", "outputTokens")
    SELECT e.eid, r."workspaceId", r."apiKeyId", 'charge', -c, w."balance", e.request, e.model, e.input, e.output
      FROM "Workspace" w WHERE w."id" = r."workspaceId"
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS fresh = ROW_COUNT;
    IF fresh = 1 THEN
      UPDATE "Reservation" SET "amount" = "amount" - c, "expiresAt" = GREATEST("expiresAt", p_expires) WHERE "Reservation"."id" = e.lease;
      IF r."apiKeyId" IS NOT NULL THEN
        UPDATE "ApiKey" SET "reserved" = "reserved" - c, "spent" = "spent" + c WHERE "ApiKey"."id" = r."apiKeyId";
      END IF;
    END IF;
    charged := true;
    RETURN NEXT;
  END LOOP;
END $$;

-- Gives up to p_amount of what a lease still holds back to the key and the workspace; the lease ends (released) when
-- nothing is left. Returns what was given back (0 when the lease is no longer held).
CREATE FUNCTION gensvc_lease_return(p_lease TEXT, p_amount BIGINT)
RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
  r "Reservation"%ROWTYPE;
  a BIGINT;
BEGIN
  SELECT * INTO r FROM "Reservation" WHERE "id" = p_lease AND "state" = 'held' FOR UPDATE;
  IF NOT FOUND THEN RETURN 0; END IF;
  a := LEAST(GREATEST(p_amount, 0), r."amount");
  UPDATE "Reservation" SET "amount" = "amount" - a, "state" = CASE WHEN "amount" - a = 0 THEN 'released'::"ReservationState" ELSE "state" END
   WHERE "id" = p_lease;
  IF r."apiKeyId" IS NOT NULL THEN UPDATE "ApiKey" SET "reserved" = "reserved" - a WHERE "id" = r."apiKeyId"; END IF;
  UPDATE "Workspace" SET "balance" = "balance" + a WHERE "id" = r."workspaceId";
  RETURN a;
END $$;

-- Keeps a live replica's leases from being taken for a dead one's.
CREATE FUNCTION gensvc_lease_renew(p_leases TEXT[], p_expires TIMESTAMP(3))
RETURNS INTEGER LANGUAGE sql AS $$
  WITH u AS (UPDATE "Reservation" SET "expiresAt" = GREATEST("expiresAt", p_expires) WHERE "id" = ANY(p_leases) AND "state" = 'held' RETURNING 1)
  SELECT count(*)::INTEGER FROM u;
$$;
