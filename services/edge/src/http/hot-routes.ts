// The paid hot path without Express's router: a request whose method and exact path name a hot route (chat
// completions, evaluate) runs that route's chain directly, as the router would run it, instead of matching it
// against every layer of the app (the router's layer matching, per-layer `next` and parameter processing were ~5 %
// of the edge's CPU per chat call). A hot route's path may also hold whole-segment parameters
// (`/api/v1/:provider/text-to-image`): a task's creation and a provider's webhook walked every router of the app,
// mounted before theirs, for ~6 % of the edge's CPU per task (issue 12). Every other request, and any variant of a
// hot path the look-up does not cover (a trailing slash, an absolute-form URL), goes through Express, where the same
// routes are mounted too: each chain is defined once (the route's `RouteSpec`) and registered in both. So a hot
// route's path must be one no route mounted before it in the app also takes: the hot look-up runs before all of them.
import { locals } from './request-context';
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from 'express';

/** One POST route: its paths and its whole chain (credentials, limits, body, idempotency, handler). */
export interface RouteSpec {
  path: string | string[] | RegExp;
  handlers: RequestHandler[];
}

/** Mounts `specs` on an Express app or router, as `router.post(path, ...handlers)`. */
export function mountRoutes(target: { post(path: RouteSpec['path'], ...handlers: RequestHandler[]): unknown }, specs: readonly RouteSpec[]): void {
  for (const spec of specs) target.post(spec.path, ...spec.handlers);
}

/** A path the exact look-up can take: literal, no parameter, wildcard or pattern (those stay Express's). */
const LITERAL = /^\/[A-Za-z0-9/._-]*$/;
/** A path of literal segments and whole-segment parameters (`:name`), matched segment by segment. */
const PARAMETERISED = /^(\/(:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._-]+))+$/;

/** A parameterised hot route: its segments, each a literal or a parameter's name (`name` set). */
interface ParamRoute {
  segments: { text: string; name?: string }[];
  hot: HotRoute;
}

interface HotRoute {
  /** What the router puts in req.route (its path: httpMetrics labels requests by it). */
  route: { path: RouteSpec['path'] };
  chain: RequestHandler[];
  /** Where the route's own handlers start in `chain` (after the app-level ones). */
  routeAt: number;
}

export interface HotRoutesOptions {
  /** The app-level middleware every request passes before any route (request context, metrics, guards). */
  front: RequestHandler[];
  routes: readonly RouteSpec[];
  /** The app's error middleware, in order. */
  errors: ErrorRequestHandler[];
  /** The app's last handler (a 404), for a request nothing answered. */
  notFound: RequestHandler;
}

/**
 * Wraps `app`: a request of a hot route runs `front`, the route's chain and, on an error, `errors` (the same
 * functions Express runs, in the same order, with the same request and response objects: Express's prototypes and
 * `res.locals` are set as app.handle sets them); any other request is the app's.
 */
export function withHotRoutes(app: Express, options: HotRoutesOptions): void {
  const byPath = new Map<string, HotRoute>();
  const withParams: ParamRoute[] = [];
  for (const spec of options.routes) {
    const route = { path: spec.path };
    const chain = [...options.front, ...spec.handlers, options.notFound];
    const paths = typeof spec.path === 'string' ? [spec.path] : Array.isArray(spec.path) ? spec.path : [];
    for (const path of paths) {
      const hot = { route, chain, routeAt: options.front.length };
      if (LITERAL.test(path)) byPath.set(path, hot);
      else if (PARAMETERISED.test(path)) {
        const segments = path.slice(1).split('/').map((text) => (text.startsWith(':') ? { text, name: text.slice(1) } : { text }));
        withParams.push({ segments, hot });
      }
    }
  }
  // app(req, res) calls app.handle(req, res, done) (express/lib/express.js), which is not in Express's types.
  type Handle = (req: Request, res: Response, done?: NextFunction) => void;
  const target = app as unknown as { handle: Handle };
  const expressHandle = target.handle.bind(app);
  target.handle = (req, res, done) => {
    if (req.method !== 'POST') return expressHandle(req, res, done);
    const path = pathOf(req.url);
    let hot = byPath.get(path);
    let params: Record<string, string> | null = {};
    if (!hot && withParams.length) {
      for (const candidate of withParams) {
        params = paramsOf(candidate, path);
        if (params) {
          hot = candidate.hot;
          break;
        }
      }
    }
    if (!hot || !params) return expressHandle(req, res, done);
    // What app.handle and the router set up before the first layer.
    req.res = res;
    res.req = req;
    Object.setPrototypeOf(req, app.request);
    Object.setPrototypeOf(res, app.response);
    if (!res.locals) res.locals = Object.create(null);
    req.baseUrl = '';
    req.originalUrl = req.url;
    req.params = params;
    run(req, res, hot, options.errors, done);
  };
}

/**
 * The parameters of `path` when it is `route`'s (each parameter a whole, non-empty segment, decoded as the router
 * decodes it), else null. A value that does not decode is left to Express (path-guard answers it before any route).
 */
function paramsOf(route: ParamRoute, path: string): Record<string, string> | null {
  const parts = path.split('/');
  if (parts.length !== route.segments.length + 1 || parts[0] !== '') return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < route.segments.length; i++) {
    const segment = route.segments[i]!;
    const part = parts[i + 1]!;
    if (segment.name === undefined) {
      if (part !== segment.text) return null;
    } else {
      if (part === '') return null;
      try {
        params[segment.name] = part.includes('%') ? decodeURIComponent(part) : part;
      } catch {
        return null;
      }
    }
  }
  return params;
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * Runs the chain the way Express's router does: each handler gets `next`; a thrown error or a rejected promise is
 * passed to `next`; an error skips the rest of the chain and goes through `errors`; an error left over at the end
 * goes to `done` (Express's final handler when none is given, which answers it as a bare 500 or closes the
 * response if it was already sent).
 */
function run(req: Request, res: Response, hot: HotRoute, errors: ErrorRequestHandler[], done: NextFunction | undefined): void {
  const { chain } = hot;
  let at = 0;
  let failing = -1;
  const next = (err?: unknown): void => {
    if (err === 'route' || err === 'router') at = chain.length - 1; // leaves the route, as the router does: the 404
    else if (err !== undefined && err !== null) return fail(err);
    if (at >= chain.length) return;
    // Set when the route is reached, as the router sets it (a request refused before has none: 'unmatched').
    if (at === hot.routeAt) req.route = hot.route as Request['route'];
    const fn = chain[at++]!;
    call(() => fn(req, res, next));
  };
  const fail = (err: unknown): void => {
    if (++failing >= errors.length) {
      if (done) return done(err);
      return finalAnswer(res, err);
    }
    const handler = errors[failing]!;
    call(() => handler(err, req, res, fail), fail);
  };
  const call = (invoke: () => unknown, onError: (e: unknown) => void = fail) => {
    try {
      const ret = invoke() as Promise<unknown> | undefined;
      if (ret && typeof ret.then === 'function') ret.then(undefined, (e: unknown) => onError(e ?? new Error('Rejected promise')));
    } catch (e) {
      onError(e);
    }
  };
  req.next = next;
  next();
}

/**
 * Express's final handler for an error nothing else answered: the error handler passes on only an error raised after
 * the answer's headers went out (a stream cut mid-way), logged here as Express's final handler would print it.
 */
function finalAnswer(res: Response, err: unknown): void {
  locals(res).log.error({ err }, 'request failed after its answer started');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.statusCode = 500;
  res.end();
}
