import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import express, { Router, type NextFunction, type Request, type Response } from 'express';

/** Where `scripts/build.mjs` puts the Vite build: beside this package, from both src/ (tests) and dist/ (runtime). */
export const DEFAULT_DASHBOARD_DIR = join(__dirname, '..', '..', '..', '..', 'dashboard', 'dist');

export interface DashboardStaticOptions {
  /** The built dashboard (index.html and assets/); DEFAULT_DASHBOARD_DIR where not given. */
  dir?: string;
  /** FILE_BASE_URL: previews of archived outputs may load from the object store's public origin. */
  fileBaseUrl: string;
}

const IMMUTABLE = 'public, max-age=31536000, immutable';

/** No inline script or style, nothing framed, nothing from another origin but the store's public copies. */
export function dashboardCsp(fileBaseUrl: string): string {
  let files = '';
  try {
    files = ` ${new URL(fileBaseUrl).origin}`;
  } catch {
    // An unparsable FILE_BASE_URL cannot pass config validation; without it previews come from 'self' only.
  }
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob:${files}`,
    `media-src 'self'${files}`,
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; ');
}

/**
 * The dashboard's built assets: `GET /` → `/dashboard/`; hashed files under `/dashboard/assets/` cached for a year;
 * every other `/dashboard/…` page is the single-page app's index.html, never cached (so a new build is picked up at
 * once). The edge's request context has set `Cache-Control: no-store` already: each answer here replaces it.
 */
export function dashboardStatic(opts: DashboardStaticOptions): Router {
  const dir = opts.dir ?? DEFAULT_DASHBOARD_DIR;
  const csp = dashboardCsp(opts.fileBaseUrl);
  const router = Router({ caseSensitive: true, strict: true });

  const pageHeaders = (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  };

  router.get('/', (_req, res) => res.redirect(302, '/dashboard/'));
  router.get('/dashboard', (_req, res) => res.redirect(302, '/dashboard/'));
  router.use(
    '/dashboard/assets',
    pageHeaders,
    express.static(join(dir, 'assets'), {
      index: false,
      redirect: false,
      dotfiles: 'ignore',
      etag: true,
      lastModified: false,
      cacheControl: false,
      setHeaders: (res) => res.setHeader('Cache-Control', IMMUTABLE),
    }),
  );

  router.use(async (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    // A missing hashed file is a 404 (the notFound handler's), never index.html: a stale page must not get HTML as JS.
    if (!req.path.startsWith('/dashboard/') || req.path.startsWith('/dashboard/assets/')) return next();
    let html: Buffer;
    try {
      // Read per request (a few KB): a rebuild while the edge runs is served at once.
      html = await readFile(join(dir, 'index.html'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return next(err);
      res.status(503).setHeader('Cache-Control', 'no-store').type('text/plain; charset=utf-8');
      res.setHeader('Retry-After', '30');
      return void res.send(
        `The dashboard has not been built (no ${join(dir, 'index.html')}). ` +
          `Run \`npm run build\` (npm start and npm test build it).\n`,
      );
    }
    pageHeaders(req, res, () => undefined);
    res.status(200).setHeader('Cache-Control', 'no-cache').type('text/html; charset=utf-8');
    res.send(html);
  });
  return router;
}
