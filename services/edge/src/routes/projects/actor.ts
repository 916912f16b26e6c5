import type { Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { memberOf, sessionOf } from '../../auth/session';

/** Who acts on a project: the workspace, and the person (null for a key the platform CLI made). */
interface Actor {
  workspaceId: string;
  userId: string | null;
}

export type ActorOf = (res: Response) => Actor;

/** An API key's workspace and creator. */
export const keyActor: ActorOf = (res) => {
  const { workspace, key } = authOf(res);
  return { workspaceId: workspace.id, userId: key.creatorId };
};

/** The dashboard's signed-in member in the workspace of the path. */
export const memberActor: ActorOf = (res) => ({
  workspaceId: memberOf(res).workspace.id,
  userId: sessionOf(res).user.id,
});
