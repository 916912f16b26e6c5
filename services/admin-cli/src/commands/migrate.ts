import type { Command } from '../command';

const migrateCommand: Command = {
  words: ['migrate'],
  summary: 'Apply pending database migrations (every command does this first; this one only reports it).',
  flags: [],
  prepare() {
    // main.ts migrates before every command, so the work is already done: report what it applied.
    return async ({ migrations, out }) => {
      const applied = migrations.applied;
      out.result({ applied }, () => (applied.length ? `applied:\n${applied.map((m) => `  ${m}`).join('\n')}` : 'The database is up to date.'));
    };
  },
};

export const migrateCommands: Command[] = [migrateCommand];
