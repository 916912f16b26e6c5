import { projectRepository, type DbHandle, type ProjectRow } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { PROJECT_ID } from './schema';

export const noSuchProject = (id: string) =>
  errors.notFound(`No project ${id.slice(0, 64)} in this workspace.`, { param: 'project_id' });

/** The workspace's project by id, or 404 (another workspace's project is 404 too). */
export async function findProject(db: DbHandle, workspaceId: string, id: string): Promise<ProjectRow> {
  const project = PROJECT_ID.test(id) ? await projectRepository.get(db, workspaceId, id) : null;
  if (!project) throw noSuchProject(id);
  return project;
}

/** A project as the API and the dashboard show it. */
export const projectObject = (p: ProjectRow) => ({
  id: p.id,
  object: 'project' as const,
  name: p.name,
  description: p.description,
  created_by: p.createdBy,
  created_at: p.createdAt.toISOString(),
  file_count: p.fileCount,
});
