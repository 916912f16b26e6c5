-- The provider jobs of a task that ended without ending it (each resubmitted), oldest first.
ALTER TABLE "Task" ADD COLUMN "providerJobs" JSONB NOT NULL DEFAULT '[]';
