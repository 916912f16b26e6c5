// Test support: a browser's part in the dashboard's protocol, over real sockets — a cookie jar, the CSRF header from
// the readable cookie, and the Origin a browser sends.
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  /** The raw Set-Cookie headers of the last answer, to check their attributes. */
  lastSetCookie: string[] = [];

  constructor(
    readonly baseUrl: string,
    private readonly origin: string | null = baseUrl,
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const h: Record<string, string> = { ...headers };
    if (this.cookies.size) h.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET') {
      const csrf = this.cookies.get('gsvc_csrf');
      if (csrf && h['x-csrf-token'] === undefined) h['x-csrf-token'] = csrf;
      if (this.origin && h.origin === undefined) h.origin = this.origin;
    }
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: 'manual',
    });
    this.lastSetCookie = res.headers.getSetCookie();
    for (const c of this.lastSetCookie) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: a JSON answer the tests read field by field, as jsonOf's
    return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as any) : null };
  }

  get = (path: string) => this.request('GET', path);
  post = (path: string, body?: unknown) => this.request('POST', path, body ?? {});
  patch = (path: string, body: unknown) => this.request('PATCH', path, body);
  delete = (path: string) => this.request('DELETE', path);

  /** Signs in as a browser does: the page loads (GET session sets the CSRF cookie), then the form posts. */
  async signIn(email: string, password: string) {
    await this.get('/api/v1/dashboard/session');
    return this.post('/api/v1/dashboard/session', { email, password });
  }
}
