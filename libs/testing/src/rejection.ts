/**
 * What `promise` rejects with, for assertions on the error's fields. It fails if the promise resolves; given `type`,
 * an error of another type is thrown as it is, so an unexpected failure reads as itself.
 */
export async function rejectionOf<E = unknown>(
  promise: Promise<unknown>,
  type?: abstract new (...args: never[]) => E,
): Promise<E> {
  const outcome = await promise.then(
    () => ({ resolved: true as const }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved) throw new Error('expected the promise to reject, but it resolved');
  if (type && !(outcome.error instanceof type)) throw outcome.error;
  return outcome.error as E;
}
