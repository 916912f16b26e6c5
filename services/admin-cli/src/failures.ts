// Domain failures of admin commands (exit code 1): AppErrors with a specific code, e.g. workspace_not_found.
import { AppError } from '@gensvc/errors';

export const notFound = (what: string, ref: string) =>
  new AppError({ status: 404, code: `${what}_not_found`, message: `No ${what.replace(/_/g, ' ')} "${ref}".` });

export const conflict = (code: string, message: string) => new AppError({ status: 409, code, message });

/** A failure whose result has already been printed (e.g. `channel test` measured a failing channel): exit code 1, no more output. */
export class AnsweredFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnsweredFailure';
  }
}
