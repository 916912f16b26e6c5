// The hot look-up's routes with parameters (a task's creation, a provider's webhook): what it takes, what it leaves
// to Express, and that what the handler sees (params, req.route) is what Express's router would give it.
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { mountRoutes, withHotRoutes, type RouteSpec } from './hot-routes';

describe('withHotRoutes, parameterised paths', () => {
  let server: Server;
  let base: string;
  /** Requests that passed the app's router (a middleware mounted before the routes sees them; the hot look-up skips it). */
  const routed: string[] = [];

  beforeAll(async () => {
    const app = express();
    app.set('case sensitive routing', true);
    const front: RequestHandler[] = [(_req, res, next) => void (res.locals.front = true, next())];
    app.use(...front);
    app.use((req, _res, next) => void (routed.push(req.url), next()));
    const answer: RequestHandler = (req, res) => void res.json({ params: req.params, route: req.route?.path, front: res.locals.front === true });
    const routes: RouteSpec[] = [
      { path: '/api/v1/:provider/text-to-image', handlers: [answer] },
      { path: '/v1/hooks/:provider/:taskId', handlers: [answer] },
    ];
    mountRoutes(app, routes);
    const notFound: RequestHandler = (_req, res) => void res.status(404).json({ notFound: true });
    app.use(notFound);
    const errors: ErrorRequestHandler[] = [(err: Error, _req, res, _next) => void res.status(500).json({ error: err.message })];
    app.use(...errors);
    withHotRoutes(app, { front, routes, errors, notFound });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => void (routed.length = 0));

  const post = async (path: string) => {
    const res = await fetch(`${base}${path}`, { method: 'POST' });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('takes a path of its routes, with the parameters and req.route the router would give, past the router', async () => {
    expect(await post('/api/v1/sim/text-to-image?x=1')).toEqual({ status: 200, body: { params: { provider: 'sim' }, route: '/api/v1/:provider/text-to-image', front: true } });
    expect(await post('/v1/hooks/fal/tsk_1')).toEqual({ status: 200, body: { params: { provider: 'fal', taskId: 'tsk_1' }, route: '/v1/hooks/:provider/:taskId', front: true } });
    expect(await post('/v1/hooks/fal/a%20b')).toMatchObject({ status: 200, body: { params: { provider: 'fal', taskId: 'a b' } } });
    expect(routed).toEqual([]);
  });

  it('leaves every other path to Express, which answers it as before', async () => {
    // A trailing slash: Express's route takes it (non-strict), through the router.
    expect(await post('/api/v1/sim/text-to-image/')).toMatchObject({ status: 200, body: { params: { provider: 'sim' } } });
    expect(await post('/api/v1/sim/Text-to-image')).toEqual({ status: 404, body: { notFound: true } });
    expect(await post('/api/v1/text-to-image')).toEqual({ status: 404, body: { notFound: true } });
    expect(await post('/api/v1/a/b/text-to-image')).toEqual({ status: 404, body: { notFound: true } });
    expect(await post('/v1/hooks/fal')).toEqual({ status: 404, body: { notFound: true } });
    expect(routed).toEqual(['/api/v1/sim/text-to-image/', '/api/v1/sim/Text-to-image', '/api/v1/text-to-image', '/api/v1/a/b/text-to-image', '/v1/hooks/fal']);
  });

  it('takes only POST', async () => {
    const res = await fetch(`${base}/api/v1/sim/text-to-image`);
    expect(res.status).toBe(404);
    expect(routed).toEqual(['/api/v1/sim/text-to-image']);
  });
});
