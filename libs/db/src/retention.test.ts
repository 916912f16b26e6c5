import { generatedExpiry, publicRetentionDays, purgeAt, uploadExpiry } from './retention';

const created = new Date('2026-01-01T00:00:00.000Z');
const days = (d: Date | null) => (d === null ? null : (d.getTime() - created.getTime()) / 86_400_000);

describe('retention (DESIGN.md §4)', () => {
  it('uploads live 30 days and have no public copy', () => {
    const e = uploadExpiry(created);
    expect({ library: days(e.expiresAt), public: days(e.publicExpiresAt), purge: days(purgeAt(e)) }).toEqual({ library: 30, public: null, purge: 30 });
  });

  it.each([
    ['free', null, 7, 7],
    ['payg', null, 90, 30],
    ['team', null, 365, 30],
    ['enterprise', null, 365, 30],
    ['enterprise', 730, 730, 30],
    ['enterprise', 10, 10, 10],
    ['team', 10, 365, 30], // the workspace setting is Enterprise's only
  ] as const)('generated output on %s (workspace setting %s): public copy %i days, library entry %i days', (tier, setting, publicDays, libraryDays) => {
    expect(publicRetentionDays(tier, setting)).toBe(publicDays);
    const e = generatedExpiry(created, tier, setting);
    expect(days(e.publicExpiresAt)).toBe(publicDays);
    expect(days(e.expiresAt)).toBe(libraryDays);
    // Row and bytes go when both lives are over.
    expect(days(purgeAt(e))).toBe(Math.max(publicDays, libraryDays));
  });
});
