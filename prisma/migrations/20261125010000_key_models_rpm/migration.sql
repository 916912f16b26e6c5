-- Per-key model allow-list (empty: every enabled model) and per-key paid-call rpm (null: the workspace's only).
ALTER TABLE "ApiKey" ADD COLUMN "allowedModels" TEXT[] DEFAULT ARRAY[]::TEXT[];
ALTER TABLE "ApiKey" ADD COLUMN "rpm" INTEGER;
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_rpm_positive" CHECK ("rpm" IS NULL OR "rpm" > 0);
