import { fileRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { fileObject } from './file-object';
import { parseListQuery } from './schema';

/** GET /v1/files — the workspace's uploads and generated outputs in (created_at, id) order, cursor `after`. */
export function listFiles(deps: Pick<EdgeDeps, 'config' | 'db'>) {
  return async (req: Request, res: Response) => {
    const { workspace } = authOf(res);
    const q = parseListQuery(req.query);
    const page = await fileRepository.list(deps.db, workspace.id, q);
    if (!page) throw errors.invalidRequest(`after: no file ${q.after} in this workspace.`, 'after');
    const data = await Promise.all(page.data.map((f) => fileObject(deps.config, f)));
    res.json({
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: page.hasMore,
    });
  };
}
