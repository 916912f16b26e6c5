-- Where a key was made, kept apart from its creator: a creator set to null by the user's deletion must never read
-- as a key made by the platform CLI (bounded by its scopes alone). Backfill: a row without a creator is a CLI key; a
-- row with one is taken as made on the dashboard.
CREATE TYPE "KeyCreatedVia" AS ENUM ('dashboard', 'cli', 'cli_for_member');

ALTER TABLE "ApiKey" ADD COLUMN "createdVia" "KeyCreatedVia";
UPDATE "ApiKey" SET "createdVia" = CASE WHEN "creatorId" IS NULL THEN 'cli' ELSE 'dashboard' END::"KeyCreatedVia";
ALTER TABLE "ApiKey" ALTER COLUMN "createdVia" SET NOT NULL;

-- A CLI key without a creator never gains one.
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_cli_has_no_creator" CHECK ("createdVia" <> 'cli' OR "creatorId" IS NULL);
