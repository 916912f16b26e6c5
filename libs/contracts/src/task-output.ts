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

// The only code that builds or reads entries of that shape: the task runner (pending entries at the provider's
// result), the archiver and the edge's image edits (archived / not archived), libs/db (which file a task's envelope
// links, and whether a task still waits for its archives).

/** An output as the provider reported it: kept as it came, archive pending. */
export function pendingOutputEntry(
  kind: OutputKind,
  url: string,
  fields: Record<string, unknown> = {},
): TaskOutputEntry {
  return { ...fields, kind, url, archive_status: 'pending' };
}

/** What archiving an output into the library adds to its entry: where the public copy is. */
export function archivedOutputPatch(location: { fileId: string; url: string }): Partial<TaskOutputEntry> {
  return { archive_status: 'archived', svc_file_id: location.fileId, svc_url: location.url };
}

/** What giving up on an output's archive adds to its entry: the provider URL stays. */
export function notArchivedOutputPatch(
  status: Exclude<ArchiveStatusValue, 'archived' | 'pending'>,
): Partial<TaskOutputEntry> {
  return { archive_status: status };
}

/** An output whose bytes are already archived (the edge stored them): its public copy is its url too. */
export function archivedOutputEntry(
  kind: OutputKind,
  location: { fileId: string; url: string },
  fields: Record<string, unknown> = {},
): TaskOutputEntry {
  return { ...fields, kind, url: location.url, ...archivedOutputPatch(location) } as TaskOutputEntry;
}

/** The entries of a stored Task.output; empty when it is not of this shape. */
export function outputEntriesOf(output: unknown): TaskOutputEntry[] {
  const parsed = taskOutputSchema.safeParse(output);
  return parsed.success ? parsed.data.outputs : [];
}

/** The indexes of the entries still waiting for the archiver. */
export function pendingOutputIndexes(output: unknown): number[] {
  return outputEntriesOf(output).flatMap((e, i) => ((e.archive_status ?? 'pending') === 'pending' ? [i] : []));
}

/** svc_file_id of outputs[0] (the one a task's envelope shows) once it is archived; else null. */
export function archivedFileIdOf(output: unknown): string | null {
  const first = outputEntriesOf(output)[0];
  return first?.archive_status === 'archived' && typeof first.svc_file_id === 'string' ? first.svc_file_id : null;
}
