import { migrate } from '@gensvc/db';
import type { Command } from '../command';

const migrateCommand: Command = {
  words: ['migrate'],
  summary: 'Apply pending database migrations (the only command that changes the schema).',
  flags: [],
  prepare() {
    return async ({ migrationUrl, out }) => {
      // The migrator takes a Postgres advisory lock: concurrent runs (a Job and a compose one-shot) are safe. The
      // lock is the session's, so it runs on DIRECT_DATABASE_URL when DATABASE_URL is a transaction-mode pooler.
      const { applied } = await migrate(migrationUrl);
      out.result({ applied }, () =>
        applied.length ? `applied:\n${applied.map((m) => `  ${m}`).join('\n')}` : 'The database is up to date.',
      );
    };
  },
};

export const migrateCommands: Command[] = [migrateCommand];
