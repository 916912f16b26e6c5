-- A kept Idempotency-Key answer is replayed byte for byte: json keeps the text it is given (its key order), where
-- jsonb normalised it (keys reordered by length), so a replay differed from the first answer in its bytes.
ALTER TABLE "IdempotencyRecord" ALTER COLUMN "responseBody" TYPE json USING "responseBody"::json;
