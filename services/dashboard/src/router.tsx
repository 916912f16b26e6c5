// A router of a few lines: the pages are few and flat, and a library would cost more bytes than it saves.
import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

export { BASE, wsPath } from './paths';
const CHANGE = 'gensvc:navigate';

function subscribe(notify: () => void) {
  window.addEventListener('popstate', notify);
  window.addEventListener(CHANGE, notify);
  return () => {
    window.removeEventListener('popstate', notify);
    window.removeEventListener(CHANGE, notify);
  };
}

const snapshot = () => window.location.pathname + window.location.search;

/** The current path and query, re-rendering on every navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const href = useSyncExternalStore(subscribe, snapshot);
  const q = href.indexOf('?');
  return { path: q < 0 ? href : href.slice(0, q), query: new URLSearchParams(q < 0 ? '' : href.slice(q)) };
}

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (to === snapshot()) return;
  if (opts.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  window.dispatchEvent(new Event(CHANGE));
  if (!opts.replace) window.scrollTo(0, 0);
}

export function Link({ to, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  const follow = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={follow} {...rest} />;
}
