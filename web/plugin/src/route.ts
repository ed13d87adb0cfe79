// route.ts replaces web/src/route.ts in the console plugin: the page and
// name are the console's path (/nmstate/topology/NODE, /nmstate/policies/NAME,
// /nmstate/states/NODE, see console-extensions.json). Navigating pushes a
// history entry and tells the console's router with a popstate event,
// which it listens to; the pages listen too, so they need no router of
// their own (and load in the browser test page, which has none).

import { useEffect, useState } from 'react';

export interface Route {
  page: 'topology' | 'policies' | 'states';
  name: string;
}

declare global {
  interface Window {
    SERVER_FLAGS?: { basePath?: string };
  }
}

function basePath(): string {
  return (window.SERVER_FLAGS?.basePath ?? '/').replace(/\/?$/, '/');
}

export function parseRoute(pathname: string): Route {
  const rest = pathname.startsWith(basePath()) ? pathname.slice(basePath().length) : pathname.replace(/^\//, '');
  const [prefix = '', page = '', name = ''] = rest.split('/');
  if (prefix === 'nmstate' && (page === 'policies' || page === 'states' || page === 'topology')) return { page, name: decodeURIComponent(name) };
  return { page: 'topology', name: '' };
}

export function pathOf(r: Route): string {
  return `${basePath()}nmstate/${r.page}` + (r.name === '' ? '' : `/${encodeURIComponent(r.name)}`);
}

export function go(r: Route) {
  // The entry has the shape of the console router's own ({usr, key,
  // idx}: react-router's browser history), so its back and forward count
  // it like any other.
  const prev = window.history.state as { idx?: number } | null;
  const state = { usr: null, key: Math.random().toString(36).slice(2, 10), idx: (prev?.idx ?? 0) + 1 };
  window.history.pushState(state, '', pathOf(r));
  window.dispatchEvent(new PopStateEvent('popstate', { state }));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(parseRoute(window.location.pathname));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.pathname));
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  return route;
}
