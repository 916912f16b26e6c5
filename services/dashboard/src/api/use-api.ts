import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from './client';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
  setData: (update: (current: T | undefined) => T | undefined) => void;
}

/** Loads once per change of `deps`; an answer that arrives after a newer load started is dropped. */
export function useApi<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setState] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  // The latest `load`, so that a reload asks with the values of the last render.
  const latestLoad = useRef(load);
  useEffect(() => {
    latestLoad.current = load;
  });

  const reload = useCallback(() => {
    const mine = ++generation.current;
    setLoading(true);
    setError(undefined);
    latestLoad.current().then(
      (value) => {
        if (mine !== generation.current) return;
        setState(value);
        setLoading(false);
      },
      (err: unknown) => {
        if (mine !== generation.current) return;
        setError(asApiError(err));
        setLoading(false);
      },
    );
  }, []);

  useEffect(() => {
    reload();
  }, [reload, ...deps]);

  const setData = useCallback((update: (current: T | undefined) => T | undefined) => setState(update), []);
  return { data, error, loading, reload, setData };
}

export function asApiError(err: unknown): ApiError {
  return err instanceof ApiError
    ? err
    : new ApiError(0, 'client_error', err instanceof Error ? err.message : String(err));
}

/** A state-changing call: pending while it runs, its error kept for the form that made it. */
export function useAction<A extends unknown[], R>(run: (...args: A) => Promise<R>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const call = useCallback(
    async (...args: A): Promise<R | undefined> => {
      setPending(true);
      setError(undefined);
      try {
        return await run(...args);
      } catch (err) {
        setError(asApiError(err));
        return undefined;
      } finally {
        setPending(false);
      }
    },
    [run],
  );
  return { call, pending, error, clearError: () => setError(undefined) };
}
