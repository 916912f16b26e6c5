-- gensvc_lease_charge: a batch of charges against budget leases in one statement (what it guarantees is written in
-- 20261126010000_lease_charge_set_based). It finds the batch's reservations and keys by primary key through an array
-- of their ids, `= ANY(ARRAY(…))`, never by a join or `IN` on the JSON: the planner sizes a JSON function at 100 rows,
-- and against that guess it scans every reservation (none is ever deleted) while the table holds up to some tens of
-- thousands of rows. libs/db/src/repositories/batch-plans.int.test.ts holds it to that.
CREATE OR REPLACE FUNCTION gensvc_lease_charge(p_entries JSONB, p_expires TIMESTAMP(3))
RETURNS TABLE (id TEXT, charged BOOLEAN) LANGUAGE plpgsql AS $$
DECLARE
  e RECORD;
  r "Reservation"%ROWTYPE;
  c BIGINT;
  fresh INTEGER;
BEGIN
  PERFORM 1 FROM "Reservation"
   WHERE "Reservation"."id" = ANY(ARRAY(SELECT DISTINCT x->>'lease' FROM jsonb_array_elements(p_entries) x))
    ORDER BY "Reservation"."id" FOR UPDATE;
  PERFORM 1 FROM "ApiKey" WHERE "ApiKey"."id" = ANY(ARRAY(
      SELECT DISTINCT res."apiKeyId" FROM "Reservation" res
       WHERE res."id" = ANY(ARRAY(SELECT x->>'lease' FROM jsonb_array_elements(p_entries) x)) AND res."apiKeyId" IS NOT NULL))
    ORDER BY "ApiKey"."id" FOR UPDATE;

  -- The batch at once, judged entry by entry with window functions over one pass (no self-joins). An entry is new
  -- if its ledger id is not there yet and it is the first of its id in the batch; a new entry is paid if its lease
  -- is held. Answers nothing (and writes nothing) when a held lease holds less than its new entries cost together.
  -- No ON CONFLICT: under the lease locks taken above, an id the ledger does not show cannot appear before this
  -- INSERT but by a concurrent batch with the same ids against another lease, and then the unique violation fails
  -- this batch whole, to be retried (and found charged) by the edge, rather than being applied without its entry.
  RETURN QUERY
  WITH ent AS MATERIALIZED (
    SELECT a.n, a.x->>'id' AS eid, a.x->>'lease' AS lease, GREATEST((a.x->>'cost')::BIGINT, 0) AS c, a.x->>'request' AS request,
           a.x->>'model' AS model, (a.x->>'input')::INTEGER AS input, (a.x->>'output')::INTEGER AS output, le.seen IS NOT NULL AS seen
      FROM jsonb_array_elements(p_entries) WITH ORDINALITY a(x, n)
      -- Here and for the lease: a probe of the primary key per entry (LATERAL … LIMIT 1 is not made a hash join over
      -- the table, whatever the planner thinks of its size).
      LEFT JOIN LATERAL (SELECT true AS seen FROM "LedgerEntry" WHERE "LedgerEntry"."id" = a.x->>'id' LIMIT 1) le ON true
  ), v AS (
    SELECT ent.*, res."workspaceId", res."apiKeyId", res."amount" AS have,
           COALESCE(res."state" = 'held', false) AND NOT ent.seen AND row_number() OVER (PARTITION BY ent.eid ORDER BY ent.n) = 1 AS novel
      FROM ent LEFT JOIN LATERAL (SELECT * FROM "Reservation" WHERE "Reservation"."id" = ent.lease LIMIT 1) res ON true
  ), w AS (
    SELECT v.*, sum(v.c) FILTER (WHERE v.novel) OVER (PARTITION BY v.lease) AS due FROM v
  ), pay AS (
    SELECT w.*, bool_or(w.novel AND w.have < w.due) OVER () AS short, bool_or(w.novel) OVER (PARTITION BY w.eid) AS paid FROM w
  ), ins AS (
    INSERT INTO "LedgerEntry" ("id", "workspaceId", "apiKeyId", "kind", "amount", "balanceAfter", "requestId", "model", "inputTokens", "outputTokens")
    SELECT pay.eid, pay."workspaceId", pay."apiKeyId", 'charge', -pay.c, (SELECT ws."balance" FROM "Workspace" ws WHERE ws."id" = pay."workspaceId"),
           pay.request, pay.model, pay.input, pay.output
      FROM pay
     WHERE pay.novel AND NOT pay.short
     ORDER BY pay.n
  ), leases AS (
    UPDATE "Reservation" res SET "amount" = res."amount" - s.total, "expiresAt" = GREATEST(res."expiresAt", p_expires)
      FROM (SELECT pay.lease, sum(pay.c) AS total FROM pay WHERE pay.novel AND NOT pay.short GROUP BY pay.lease) s
     WHERE res."id" = ANY(ARRAY(SELECT DISTINCT x->>'lease' FROM jsonb_array_elements(p_entries) x)) AND res."id" = s.lease
  ), keys AS (
    UPDATE "ApiKey" k SET "reserved" = k."reserved" - s.total, "spent" = k."spent" + s.total
      FROM (SELECT pay."apiKeyId", sum(pay.c) AS total FROM pay WHERE pay.novel AND NOT pay.short AND pay."apiKeyId" IS NOT NULL GROUP BY pay."apiKeyId") s
     WHERE k."id" = s."apiKeyId"
  )
  SELECT pay.eid, pay.seen OR pay.paid FROM pay WHERE NOT pay.short ORDER BY pay.n;
  IF FOUND THEN RETURN; END IF;

  -- A lease short of its new entries' total: entry by entry, in order, each charged while the lease still covers it.
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
