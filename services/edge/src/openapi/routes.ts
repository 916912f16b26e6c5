// GET /openapi.json (the document, made once per app from the operations) and GET /docs (Swagger UI from the
// swagger-ui-dist package, served from node_modules: the page loads nothing from another origin).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { taskEnvelopeSchema } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import { buildOpenApiDocument } from './document';
import { operation, type ApiOperation } from './operation';

export const DOCS_ASSET_PREFIX = '/docs/assets/';

const swaggerUiDir = () => join(require.resolve('swagger-ui-dist/package.json'), '..');

/** The page's files: two of swagger-ui-dist's, and the script that starts it on /openapi.json (no inline script). */
const ASSETS: Record<string, { type: string; file?: string; text?: string }> = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', file: 'swagger-ui.css' },
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', file: 'swagger-ui-bundle.js' },
  'start.js': {
    type: 'text/javascript; charset=utf-8',
    // validatorUrl null: Swagger UI would otherwise send the document to an online validator.
    text:
      "window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', " +
      'validatorUrl: null, deepLinking: true, tryItOutEnabled: false });\n',
  },
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gensvc API</title>
<link rel="stylesheet" href="${DOCS_ASSET_PREFIX}swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${DOCS_ASSET_PREFIX}swagger-ui-bundle.js"></script>
<script src="${DOCS_ASSET_PREFIX}start.js"></script>
</body>
</html>
`;

export const docsApi: ApiOperation[] = [
  operation({
    method: 'get',
    route: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This document (OpenAPI 3.1)',
    tag: 'Docs',
    auth: 'none',
    responses: { 200: { description: 'The OpenAPI document.', schema: z.looseObject({ openapi: z.string() }) } },
    errors: [],
  }),
  operation({
    method: 'get',
    route: '/docs',
    operationId: 'getDocsPage',
    summary: 'The API reference page, rendering this document',
    tag: 'Docs',
    auth: 'none',
    responses: { 200: { description: 'An HTML page.', content: { 'text/html': 'text' } } },
    errors: [],
  }),
];

export interface OpenApiRouteOptions {
  publicBaseUrl: string;
  /** The operations of the app the document describes. */
  operations: readonly ApiOperation[];
}

export function openApiRoutes(opts: OpenApiRouteOptions): express.Router {
  // Made at the first read (its build is slow enough that no other route's start should wait for it), then answered
  // as text.
  let json: string | undefined;
  const documentText = () =>
    (json ??= JSON.stringify(
      buildOpenApiDocument(opts.operations, {
        version: '1.0.0',
        serverUrl: opts.publicBaseUrl,
        webhook: { envelope: taskEnvelopeSchema },
      }),
    ));
  const assets = new Map<string, { type: string; body: Buffer }>();
  const asset = (name: string) => {
    const spec = Object.hasOwn(ASSETS, name) ? ASSETS[name]! : null;
    if (!spec) return null;
    let made = assets.get(name);
    if (!made) {
      made = {
        type: spec.type,
        body: spec.file ? readFileSync(join(swaggerUiDir(), spec.file)) : Buffer.from(spec.text!),
      };
      assets.set(name, made);
    }
    return made;
  };

  const router = express.Router({ caseSensitive: true, strict: true });
  router.get('/openapi.json', (_req: Request, res: Response) => {
    res.type('application/json').send(documentText());
  });
  router.get('/docs', (_req: Request, res: Response) => {
    res
      .set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
      .type('html')
      .send(PAGE);
  });
  // The page's own files (not API operations: the coverage test leaves DOCS_ASSET_PREFIX out by name).
  router.get(`${DOCS_ASSET_PREFIX}:name`, (req: Request<{ name: string }>, res: Response) => {
    const found = asset(req.params.name);
    if (!found) throw errors.routeNotFound(req.method, req.path);
    res.type(found.type).send(found.body);
  });
  return router;
}
