-- DropIndex
DROP INDEX "Task_workspaceId_createdAt_idx";

-- AlterTable
ALTER TABLE "Task" ADD COLUMN     "callbackRoundStart" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "deadlineAt" TIMESTAMP(3),
ADD COLUMN     "reservationId" TEXT,
ADD COLUMN     "upstreamUrls" JSONB;

-- CreateIndex
CREATE INDEX "Task_workspaceId_createdAt_id_idx" ON "Task"("workspaceId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Task_callbackState_updatedAt_idx" ON "Task"("callbackState", "updatedAt");

