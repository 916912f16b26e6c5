/** Where the edge serves the app, and the address of a workspace's page (the workspace is in the URL). */
export const BASE = '/dashboard';

export const wsPath = (ws: string, page: string) => `${BASE}/w/${encodeURIComponent(ws)}/${page}`;
