// The shape of Task.output for generation tasks, shared by its writer (the task runner, on completion) and the
// archiver (which copies each output into S3 and records the result in the same entry). Stored as JSON:
//
//   { "outputs": [ { "kind": "image" | "video", "url": "https://provider.example/out.png",
//                    ...provider result fields (duration, width, ...), kept as they came,
//                    "archive_status": "pending" | "archived" | "failed" | "too_large",
//                    "svc_file_id": "file_...", "svc_url": "<FILE_BASE_URL>/<bucket>/<storage key>" } ],
//     ...other task-level fields }
//
// `url` stays the provider's URL whatever the archive's outcome (spec §7: an output that cannot be archived does
// not fail the task; the provider URL is returned when available). svc_* are set only once archived.
import { z } from 'zod';

export const ARCHIVE_STATUSES = ['archived', 'pending', 'failed', 'too_large'] as const;
export type ArchiveStatusValue = (typeof ARCHIVE_STATUSES)[number];

export const OUTPUT_KINDS = ['image', 'video'] as const;
export type OutputKind = (typeof OUTPUT_KINDS)[number];

export const taskOutputEntrySchema = z.looseObject({
  kind: z.enum(OUTPUT_KINDS),
  url: z.string().min(1),
  archive_status: z.enum(ARCHIVE_STATUSES).optional(),
  svc_file_id: z.string().optional(),
  svc_url: z.string().optional(),
});
export type TaskOutputEntry = z.output<typeof taskOutputEntrySchema>;

export const taskOutputSchema = z.looseObject({ outputs: z.array(taskOutputEntrySchema) });
export type TaskOutput = z.output<typeof taskOutputSchema>;

/** Largest output the archiver copies, in bytes: images 30 MB (spec §8 image input), videos 512 MiB (spec §8). */
export const ARCHIVE_LIMIT_BYTES: Record<OutputKind, number> = { image: 30_000_000, video: 512 * 1024 * 1024 };
