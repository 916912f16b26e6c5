import type { Output } from '../../api/types';
import { formatDate } from '../../components/format';

/** When a file goes, or that a project keeps it, as the edge says (expires_at null while attached). */
export function Expiry({ o }: { o: Pick<Output, 'expires_at' | 'projects'> }) {
  if (o.expires_at === null)
    return <>Kept by {o.projects.length === 1 ? 'a project' : `${o.projects.length} projects`}</>;
  return <>Goes on {formatDate(o.expires_at)}</>;
}
