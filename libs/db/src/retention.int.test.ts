// How long files live, and when the retention sweep may remove them: the expiries are computed here, and the moment
// of removal is what fileRepository.purgeable (the sweep's own query) answers, against real Postgres.
import { makeWorkspace, useTestContext } from '@gensvc/testing';
import { newId } from './ids';
import { fileRepository } from './repositories/file.repository';
import { generatedExpiry, publicRetentionDays, uploadExpiry, type FileExpiry } from './retention';

const ctx = useTestContext();
const created = new Date('2026-01-01T00:00:00.000Z');
const days = (d: Date | null) => (d === null ? null : (d.getTime() - created.getTime()) / 86_400_000);

/**
 * The first instant the sweep's query takes a file with these lives (it can only change at one of the two expiries).
 */
async function purgedAt(e: FileExpiry): Promise<Date> {
  const ws = await makeWorkspace(ctx.db);
  const id = newId('file');
  await fileRepository.create(ctx.db, {
    id,
    workspaceId: ws.id,
    source: e.publicExpiresAt ? 'generated' : 'upload',
    purpose: e.publicExpiresAt ? 'output' : 'vision',
    filename: 'f.png',
    contentType: 'image/png',
    bytes: 1n,
    storageKey: id,
    createdAt: created,
    ...e,
  });
  const taken = async (at: Date) => (await fileRepository.purgeable(ctx.db, at, 1_000)).some((f) => f.id === id);
  try {
    const candidates = [e.expiresAt, e.publicExpiresAt]
      .filter((d): d is Date => d !== null)
      .sort((a, b) => a.getTime() - b.getTime());
    for (const at of candidates) {
      if (!(await taken(at))) continue;
      expect(await taken(new Date(at.getTime() - 1))).toBe(false);
      return at;
    }
    throw new Error('the file is never purgeable');
  } finally {
    await fileRepository.remove(ctx.db, ws.id, id);
  }
}

describe('retention (DESIGN.md §4)', () => {
  it('uploads live 30 days and have no public copy', async () => {
    const e = uploadExpiry(created);
    expect({ library: days(e.expiresAt), public: days(e.publicExpiresAt), purge: days(await purgedAt(e)) }).toEqual({
      library: 30,
      public: null,
      purge: 30,
    });
  });

  it.each([
    ['free', null, 7, 7],
    ['payg', null, 90, 30],
    ['team', null, 365, 30],
    ['enterprise', null, 365, 30],
    ['enterprise', 730, 730, 30],
    ['enterprise', 10, 10, 10],
    ['team', 10, 365, 30], // the workspace setting is Enterprise's only
  ] as const)(
    'generated output on %s (workspace setting %s): public copy %i days, library entry %i days',
    async (tier, setting, publicDays, libraryDays) => {
      expect(publicRetentionDays(tier, setting)).toBe(publicDays);
      const e = generatedExpiry(created, tier, setting);
      expect(days(e.publicExpiresAt)).toBe(publicDays);
      expect(days(e.expiresAt)).toBe(libraryDays);
      // Row and bytes go when both lives are over.
      expect(days(await purgedAt(e))).toBe(Math.max(publicDays, libraryDays));
    },
  );
});
