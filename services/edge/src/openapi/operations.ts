// Every public route's entry, gathered from the route folders. A new route: one `operation({...})` in its folder's
// openapi.ts beside its zod schemas; a new folder: its list added here. openapi.int.test.ts fails until both agree
// with what buildApp registers.
import { callbackApi } from '../routes/callbacks/openapi';
import { chatApi } from '../routes/chat/openapi';
import { evaluateApi } from '../routes/evaluate/openapi';
import { fileApi } from '../routes/files/openapi';
import { healthApi } from '../routes/health/openapi';
import { imageApi } from '../routes/images/openapi';
import { meApi } from '../routes/me/openapi';
import { modelApi } from '../routes/models/openapi';
import { projectApi } from '../routes/projects/openapi';
import { providerWebhookApi } from '../routes/provider-webhooks/openapi';
import { responseApi } from '../routes/responses/openapi';
import { taskApi } from '../routes/tasks/openapi';
import { usageApi } from '../routes/usage/openapi';
import type { ApiOperation } from './operation';
import { docsApi } from './routes';

export const API_OPERATIONS: readonly ApiOperation[] = [
  ...evaluateApi,
  ...taskApi,
  ...callbackApi,
  ...fileApi,
  ...projectApi,
  ...meApi,
  ...usageApi,
  ...modelApi,
  ...chatApi,
  ...responseApi,
  ...imageApi,
  ...providerWebhookApi,
  ...healthApi,
  ...docsApi,
];
