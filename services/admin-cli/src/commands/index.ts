import type { Command } from '../command';
import { balanceCommands } from './balance';
import { channelCommands } from './channel';
import { keyCommands } from './key';
import { migrateCommands } from './migrate';
import { modelCommands } from './model';
import { secretsCommands } from './secrets';
import { userCommands } from './user';
import { usageCommands } from './usage';
import { workspaceCommands } from './workspace';

/** Every command, in the order usage lists them. */
export const COMMANDS: readonly Command[] = [
  ...workspaceCommands,
  ...userCommands,
  ...keyCommands,
  ...balanceCommands,
  ...channelCommands,
  ...modelCommands,
  ...usageCommands,
  ...migrateCommands,
  ...secretsCommands,
];
