// Domain failures of admin commands (exit code 1): AppErrors with a specific code, e.g. workspace_not_found.
import { errors } from '@gensvc/errors';

export const notFound = errors.adminNotFound;
export const conflict = errors.adminConflict;

/**
 * A failure whose result has already been printed (e.g. `channel test` measured a failing channel): exit code 1, no
 * more output.
 */
export class AnsweredFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnsweredFailure';
  }
}
