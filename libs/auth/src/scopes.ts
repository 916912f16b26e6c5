export const SCOPES = ['llm.evaluate', 'llm.chat', 'tasks.write', 'tasks.read', 'files.write', 'account.read'] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);
