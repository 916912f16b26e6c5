// What a service may hold of the database: the Db and Tx handles, with no query method on their type;
// the repositories, typed over those handles (`published`: each repository file takes the Prisma client, and a
// handle is that client, so this is a retyping at this boundary and a method is written once); and plain row and
// enum types. Never the Prisma client, its namespace or raw SQL. Tests reach the client through
// @gensvc/db/testing (testing.ts), which production code does not import (boundaries.test.ts).
import { published } from './client';
import { apiKeyRepository as apiKeys } from './repositories/api-key.repository';
import { billingRepository as billing } from './repositories/billing.repository';
import { callbackRepository as callbacks } from './repositories/callback.repository';
import { channelRepository as channels } from './repositories/channel.repository';
import { fileRepository as files } from './repositories/file.repository';
import { idempotencyRepository as idempotency } from './repositories/idempotency.repository';
import { invitationRepository as invitations } from './repositories/invitation.repository';
import { membershipRepository as memberships } from './repositories/membership.repository';
import { modelRepository as models } from './repositories/model.repository';
import { passwordResetRepository as passwordResets } from './repositories/password-reset.repository';
import { projectRepository as projects } from './repositories/project.repository';
import { sessionRepository as sessions } from './repositories/session.repository';
import { taskRepository as tasks } from './repositories/task.repository';
import { usageRepository as usage } from './repositories/usage.repository';
import { userRepository as users } from './repositories/user.repository';
import { workspaceRepository as workspaces } from './repositories/workspace.repository';

export {
  closeDb,
  createDb,
  isUniqueViolation,
  pingDb,
  withTxHandle as withTx,
  type Db,
  type DbHandle,
  type DbOptions,
  type JsonInput,
  type Tx,
} from './client';
export * from './group-commit';
export * from './ids';
export * from './migrate';
export * from './money';
export * from './secret-box';
// Each repository file's types and helpers; its repository object is the published one below (a local export
// takes precedence over `export *`).
export * from './repositories/workspace.repository';
export * from './repositories/user.repository';
export * from './repositories/api-key.repository';
export * from './repositories/channel.repository';
export * from './repositories/model.repository';
export * from './repositories/file.repository';
export * from './days';
export * from './retention';
export type { ApiKeyModel, ChannelModel, ModelModel, WorkspaceModel } from './generated/prisma/models';
export * from './generated/prisma/enums';
export * from './repositories/billing.repository';
export * from './repositories/idempotency.repository';
export * from './repositories/task.repository';
export * from './repositories/callback.repository';
export * from './repositories/session.repository';
export * from './repositories/membership.repository';
export * from './repositories/invitation.repository';
export * from './repositories/password-reset.repository';
export * from './repositories/usage.repository';
export * from './repositories/project.repository';

export const apiKeyRepository = published(apiKeys);
export const billingRepository = published(billing);
export const callbackRepository = published(callbacks);
export const channelRepository = published(channels);
export const fileRepository = published(files);
export const idempotencyRepository = published(idempotency);
export const invitationRepository = published(invitations);
export const membershipRepository = published(memberships);
export const modelRepository = published(models);
export const passwordResetRepository = published(passwordResets);
export const projectRepository = published(projects);
export const sessionRepository = published(sessions);
export const taskRepository = published(tasks);
export const usageRepository = published(usage);
export const userRepository = published(users);
export const workspaceRepository = published(workspaces);
