// The shapes of services/edge/src/routes/dashboard/API.md, as the edge sends them.

export type Role = 'owner' | 'admin' | 'member';
type Tier = 'free' | 'payg' | 'team' | 'enterprise';

interface User {
  id: string;
  email: string;
  name: string | null;
}

interface WorkspaceRef {
  id: string;
  name: string;
  tier: Tier;
  role: Role;
}

export interface Session {
  user: User;
  workspaces: WorkspaceRef[];
  csrf_token: string;
}

/** What the person's role allows, as the edge computes it: the pages show only these actions. */
export interface Permissions {
  manage_all_keys: boolean;
  manage_members: boolean;
  manage_owners: boolean;
  delete_files: boolean;
  delete_projects: boolean;
  redeliver: boolean;
  callback_secret: boolean;
}

export interface WorkspaceInfo {
  workspace: { id: string; name: string; tier: Tier; currency: string; balance: number };
  role: Role;
  permissions: Permissions;
}

export interface Key {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  spend_cap: number | null;
  spent: number;
  /** The only models the key may use; empty: all. */
  models: string[];
  /** The key's own paid calls per minute; null: the workspace's limit only. */
  rpm: number | null;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  created_at: string;
  rotated_at: string | null;
  previous_expires_at: string | null;
  /** Where the key was made; a `dashboard` key with a null creator was made by a person since deleted. */
  created_via: 'dashboard' | 'cli' | 'cli_for_member';
  creator: { id: string; email: string } | null;
  status: 'active' | 'revoked' | 'expired';
  /** What the signed-in person may do with the key (the edge decides). */
  can_rotate: boolean;
  can_revoke: boolean;
}

export interface KeyWithSecret {
  key: Key;
  secret: string;
}

export interface CreateKeyInput {
  name: string;
  scopes: string[];
  spend_cap?: number | null;
  expires_at?: string | null;
  models?: string[];
  rpm?: number | null;
}

export interface Member {
  user: User;
  role: Role;
  created_at: string;
}

/** A pending invitation: its link went to the address by mail, and only there. */
export interface Invitation {
  id: string;
  email: string;
  role: Role;
  status: 'sent';
  /** How often its link was mailed (each resend replaces the link). */
  sends: number;
  expires_at: string;
  created_at: string;
}

export interface MembersList {
  data: Member[];
  invitations?: Invitation[];
}

export interface InviteResult {
  invitation: Invitation;
}

/** The one answer to a password-reset request, whatever the address. */
export interface ResetRequested {
  status: 'sent';
  message: string;
}

export interface InvitationInfo {
  email: string;
  role: Role;
  workspace: { id: string; name: string };
  expires_at: string;
  user_exists: boolean;
}

export type OutputKind = 'image' | 'video' | 'audio' | 'document';
export type OutputSource = 'generated' | 'upload';

interface Money {
  amount: number;
  currency: string;
}

export interface Output {
  id: string;
  kind: OutputKind;
  content_type: string;
  bytes: number;
  filename: string;
  created_at: string;
  source: OutputSource;
  model: string | null;
  prompt: string | null;
  size: string | null;
  duration: number | null;
  cost: Money | null;
  task_id: string | null;
  /** Same-origin relative links (signed, valid one hour). */
  preview_url: string;
  download_url: string;
  /** When the generated output's public copy goes; null for uploads, which have none. */
  public_copy_expires_at: string | null;
  /** When the file goes; null while a saved project keeps it. */
  expires_at: string | null;
  /** The saved projects the file is attached to. */
  projects: string[];
}

export interface Project {
  id: string;
  name: string;
  description: string;
  created_by: User | null;
  created_at: string;
  file_count: number;
}

/** The project lists' envelope (as the API's lists). */
export interface ProjectList {
  data: Project[];
  has_more: boolean;
  last_id: string | null;
}

/** A file as attaching or detaching answers it: what the grid needs to say when it goes. */
export interface ProjectFileChange {
  id: string;
  filename: string;
  expires_at: string | null;
  projects: string[];
}

export interface OutputQuery {
  source?: OutputSource;
  kind?: OutputKind | '';
  model?: string;
  from?: string;
  to?: string;
  after?: string;
  limit?: number;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed' | 'canceled';

export interface TaskRow {
  task_id: string;
  status: TaskStatus;
  model: string;
  operation: string;
  error_code: string | null;
  created_at: string;
  completed_at: string | null;
  callback_state: string | null;
}

export interface TaskQuery {
  status?: TaskStatus | '';
  after?: string;
  limit?: number;
}

export interface TaskDetail {
  task: Record<string, unknown> & {
    task_id: string;
    status: TaskStatus;
    model: string;
    operation: string;
    input: unknown;
    error: unknown;
    created_at: string;
    callback_url: string | null;
    callback_state: string | null;
  };
  attempts: CallbackAttempt[];
}

interface CallbackAttempt {
  attempt: number;
  delivery_id: string;
  status_code: number | null;
  duration_ms: number | null;
  error: string | null;
  created_at: string;
}

export interface CallbackSecret {
  secret: string;
  previous_expires_at: string | null;
}

/** POST …/callbacks/recover: rounds started for deliveries parked since `since`; has_more: call again. */
export interface CallbackRecovery {
  since: string;
  recovered: number;
  has_more: boolean;
}

/** POST …/callbacks/test: how the receiver answered a signed sample callback. */
export interface CallbackTest {
  url: string;
  task_id: string;
  delivery_id: string;
  webhook_id: string;
  status_code: number | null;
  delivered: boolean;
  latency_ms: number;
  response_head: string | null;
  error: string | null;
}

export type UsageSplit = 'model' | 'key';

export interface Usage {
  currency: string;
  balance: number;
  days: string[];
  /** id null: charges without a model (split=model) or without a key (split=key). */
  series: { id: string | null; label: string; amounts: number[] }[];
  total: number;
  keys: { id: string; name: string; prefix: string; spent: number; spend_cap: number | null }[];
}
