// route.ts is where the views are: a page (topology, policies, states)
// and a name (a node or a policy). `knmstate ui` keeps it in the location
// hash (#/topology/NODE), so a view can be linked and the browser tests
// open one; the console plugin replaces this module (web/plugin/src/route.ts)
// with one that keeps it in the console's path.

import { useEffect, useState } from 'react';

export interface Route {
  page: 'topology' | 'policies' | 'states';
  name: string;
}

export function parseRoute(hash: string): Route {
  const [, page = '', name = ''] = hash.replace(/^#/, '').split('/');
  if (page === 'policies' || page === 'states' || page === 'topology') return { page, name: decodeURIComponent(name) };
  return { page: 'topology', name: '' };
}

export function go(r: Route) {
  window.location.hash = `#/${r.page}/${encodeURIComponent(r.name)}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
