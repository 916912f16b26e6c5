// The one client of the edge's dashboard routes (services/edge/src/routes/dashboard/API.md). It adds the CSRF
// header to every state-changing call, turns error bodies into ApiError, and sends a 401 to the sign-in page.
import type {
  CallbackRecovery,
  CallbackSecret,
  CallbackTest,
  CreateKeyInput,
  InvitationInfo,
  InviteResult,
  ResetRequested,
  Key,
  KeyWithSecret,
  Member,
  MembersList,
  Output,
  OutputQuery,
  Page,
  Project,
  ProjectFileChange,
  ProjectList,
  Role,
  Session,
  TaskDetail,
  TaskQuery,
  TaskRow,
  Usage,
  UsageSplit,
  WorkspaceInfo,
} from './types';

const API_BASE = '/api/v1/dashboard';
const CSRF_COOKIE = 'gsvc_csrf';

/** An error answer of the edge: `{"error":{"type","code","message","param","request_id"}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly requestId: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Unauthorized = () => void;
let unauthorized: Unauthorized = () => undefined;

/** Called when a signed-in call answers 401: the app sends the person to the sign-in page. */
export function onUnauthorized(handler: Unauthorized) {
  unauthorized = handler;
}

/** The double-submit token: the `gsvc_csrf` cookie the edge sets (readable by the page by design). */
function csrfToken(): string {
  for (const part of document.cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === CSRF_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return '';
}

/**
 * Sign-out clears the CSRF cookie, and a page may sit open past its expiry: GET /session sets a fresh one (signed in
 * or not), so a state change is never sent without a token.
 */
async function ensureCsrfToken(): Promise<string> {
  const token = csrfToken();
  if (token) return token;
  await fetch(`${API_BASE}/session`, { credentials: 'same-origin', headers: { Accept: 'application/json' } }).catch(
    () => undefined,
  );
  return csrfToken();
}

type Query = Record<string, string | number | undefined | null>;

interface RequestOptions {
  body?: unknown;
  query?: Query;
  /** A 401 here is an answer for the caller (sign-in, the session probe), not a reason to leave the page. */
  expect401?: boolean;
}

const SAFE = new Set(['GET', 'HEAD']);

function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (!SAFE.has(method)) headers['X-CSRF-Token'] = await ensureCsrfToken();
  let res: Response;
  try {
    res = await fetch(`${API_BASE}${path}${queryString(opts.query)}`, {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch {
    throw new ApiError(
      0,
      'network_error',
      'The dashboard could not reach the server. Check your connection and try again.',
    );
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (a proxy's error page): reported below by status.
  }
  if (!res.ok) {
    const e = (
      body as { error?: { code?: string; message?: string; param?: string | null; request_id?: string } } | null
    )?.error;
    const err = new ApiError(
      res.status,
      e?.code ?? `http_${res.status}`,
      e?.message ?? `The server answered ${res.status}.`,
      e?.param ?? null,
      e?.request_id ?? res.headers.get('x-request-id'),
    );
    if (res.status === 401 && !opts.expect401) unauthorized();
    throw err;
  }
  return body as T;
}

const ws = (id: string) => `/workspaces/${encodeURIComponent(id)}`;
const seg = encodeURIComponent;

export const api = {
  session: {
    get: () => request<Session>('GET', '/session', { expect401: true }),
    signIn: (email: string, password: string) =>
      request<Session>('POST', '/session', { body: { email, password }, expect401: true }),
    signOut: () => request<void>('DELETE', '/session', { expect401: true }),
    changePassword: (current_password: string, new_password: string) =>
      request<Session>('POST', '/password', { body: { current_password, new_password } }),
  },
  passwordReset: {
    request: (email: string) =>
      request<ResetRequested>('POST', '/password-reset', { body: { email }, expect401: true }),
    check: (token: string) => request<{ valid: true }>('GET', `/password-reset/${seg(token)}`, { expect401: true }),
    set: (token: string, password: string) =>
      request<void>('POST', `/password-reset/${seg(token)}`, { body: { password }, expect401: true }),
  },
  invitations: {
    get: (token: string) => request<InvitationInfo>('GET', `/invitations/${seg(token)}`, { expect401: true }),
    accept: (token: string, body: { password?: string; name?: string }) =>
      request<Session>('POST', `/invitations/${seg(token)}/accept`, { body, expect401: true }),
  },
  workspace: (id: string) => ({
    get: () => request<WorkspaceInfo>('GET', ws(id)),
    keys: {
      list: () => request<{ data: Key[] }>('GET', `${ws(id)}/keys`),
      create: (input: CreateKeyInput) => request<KeyWithSecret>('POST', `${ws(id)}/keys`, { body: input }),
      rotate: (keyId: string, grace_seconds: number) =>
        request<KeyWithSecret>('POST', `${ws(id)}/keys/${seg(keyId)}/rotate`, { body: { grace_seconds } }),
      revoke: (keyId: string) => request<{ key: Key }>('POST', `${ws(id)}/keys/${seg(keyId)}/revoke`),
    },
    members: {
      list: () => request<MembersList>('GET', `${ws(id)}/members`),
      add: (email: string, role: Role) => request<InviteResult>('POST', `${ws(id)}/members`, { body: { email, role } }),
      setRole: (userId: string, role: Role) =>
        request<{ member: Member }>('PATCH', `${ws(id)}/members/${seg(userId)}`, { body: { role } }),
      remove: (userId: string) => request<void>('DELETE', `${ws(id)}/members/${seg(userId)}`),
      cancelInvitation: (invitationId: string) => request<void>('DELETE', `${ws(id)}/invitations/${seg(invitationId)}`),
      resendInvitation: (invitationId: string) =>
        request<InviteResult>('POST', `${ws(id)}/invitations/${seg(invitationId)}/resend`),
    },
    outputs: {
      list: (q: OutputQuery) => request<Page<Output>>('GET', `${ws(id)}/outputs`, { query: { ...q } }),
      remove: (fileId: string) => request<{ id: string; deleted: true }>('DELETE', `${ws(id)}/outputs/${seg(fileId)}`),
      takeDownPublicCopy: (fileId: string) =>
        request<{ id: string; object: 'public_copy'; deleted: true }>(
          'DELETE',
          `${ws(id)}/outputs/${seg(fileId)}/public-copy`,
        ),
    },
    projects: {
      list: (after?: string) =>
        request<ProjectList>('GET', `${ws(id)}/projects`, { query: { limit: 100, ...(after ? { after } : {}) } }),
      create: (name: string, description: string) =>
        request<Project>('POST', `${ws(id)}/projects`, { body: { name, description } }),
      get: (projectId: string) => request<Project>('GET', `${ws(id)}/projects/${seg(projectId)}`),
      remove: (projectId: string) =>
        request<{ id: string; deleted: true }>('DELETE', `${ws(id)}/projects/${seg(projectId)}`),
      files: (projectId: string, after?: string) =>
        request<Page<Output>>('GET', `${ws(id)}/projects/${seg(projectId)}/files`, {
          query: { limit: 24, ...(after ? { after } : {}) },
        }),
      attach: (projectId: string, fileId: string) =>
        request<ProjectFileChange>('POST', `${ws(id)}/projects/${seg(projectId)}/files`, { body: { file_id: fileId } }),
      detach: (projectId: string, fileId: string) =>
        request<ProjectFileChange>('DELETE', `${ws(id)}/projects/${seg(projectId)}/files/${seg(fileId)}`),
    },
    tasks: {
      list: (q: TaskQuery) => request<Page<TaskRow>>('GET', `${ws(id)}/tasks`, { query: { ...q } }),
      get: (taskId: string) => request<TaskDetail>('GET', `${ws(id)}/tasks/${seg(taskId)}`),
      redeliver: (taskId: string) =>
        request<{ task: TaskDetail['task'] }>('POST', `${ws(id)}/tasks/${seg(taskId)}/redeliver`),
    },
    callbackSecret: {
      get: () => request<CallbackSecret>('GET', `${ws(id)}/callback-secret`),
      rotate: () => request<CallbackSecret>('POST', `${ws(id)}/callback-secret/rotate`),
      retirePrevious: () => request<CallbackSecret>('POST', `${ws(id)}/callback-secret/retire-previous`),
    },
    callbacks: {
      recover: (since: string) => request<CallbackRecovery>('POST', `${ws(id)}/callbacks/recover`, { body: { since } }),
      test: (url: string) => request<CallbackTest>('POST', `${ws(id)}/callbacks/test`, { body: { url } }),
    },
    usage: (split: UsageSplit, days = 30) => request<Usage>('GET', `${ws(id)}/usage`, { query: { split, days } }),
  }),
};

export type WorkspaceApi = ReturnType<typeof api.workspace>;
