import { Loading } from './notice';

/** The foot of a cursor list: a spinner while a page loads, then "Load more" while the edge has more. */
export function LoadMore({ list }: { list: { loading: boolean; hasMore: boolean; loadMore: () => void } }) {
  if (list.loading) return <Loading />;
  if (!list.hasMore) return null;
  return (
    <div className="center">
      <button type="button" className="button" onClick={list.loadMore}>
        Load more
      </button>
    </div>
  );
}
