import { useCallback, useEffect, useRef, useState } from 'react';
import type { ApiError } from './client';
import type { Page } from './types';
import { asApiError } from './use-api';

/**
 * A list the edge pages with a cursor: the first page whenever `key` changes, then "Load more" appends the next. An
 * answer that arrives after a newer load started is dropped.
 */
export function useCursorList<T>(fetchPage: (after: string | null) => Promise<Page<T>>, key: string) {
  const [items, setItems] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | undefined>();
  const generation = useRef(0);
  // The latest `fetchPage`, so that "Load more" asks with the filters of the last render.
  const latestFetch = useRef(fetchPage);
  useEffect(() => {
    latestFetch.current = fetchPage;
  });

  const load = useCallback(async (after: string | null) => {
    const mine = ++generation.current;
    setLoading(true);
    setError(undefined);
    try {
      const page = await latestFetch.current(after);
      if (mine !== generation.current) return;
      setItems((prev) => (after ? [...prev, ...page.data] : page.data));
      setCursor(page.next_cursor);
      setHasMore(page.has_more);
    } catch (err) {
      if (mine === generation.current) setError(asApiError(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` names the list; a new one starts from its first page
  useEffect(() => {
    setItems([]);
    void load(null);
  }, [load, key]);

  return { items, setItems, hasMore, loading, error, loadMore: () => void load(cursor) };
}
