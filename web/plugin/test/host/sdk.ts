// sdk.ts is what the browser test page provides as the console's shared
// module @openshift-console/dynamic-plugin-sdk: the two calls the plugin
// makes (useK8sWatchResource, consoleFetchJSON), on the test server's
// /api/kubernetes/ (a real API server behind it, as behind the console's
// bridge). The watch is knmstate ui's own (web/src/k8s.ts).

import { useWatch } from '../../../src/k8s';
import type { Resource } from '../../../src/policy';

interface GVK {
  group: string;
  version: string;
  kind: string;
}

// pathOf is the collection of a cluster-scoped kind (plural by English
// rule: ...Policy → policies).
export function pathOf({ group, version, kind }: GVK): string {
  const lower = kind.toLowerCase();
  const plural = lower.endsWith('y') ? lower.slice(0, -1) + 'ies' : lower + 's';
  const prefix = group === 'core' || group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  return `/api/kubernetes${prefix}/${plural}`;
}

export function useK8sWatchResource<T>(res: { groupVersionKind: GVK; isList?: boolean }): [T, boolean, unknown] {
  const w = useWatch<Resource>(pathOf(res.groupVersionKind));
  return [w.items as unknown as T, w.loaded, w.error === undefined ? undefined : new Error(w.error)];
}

// The console's fetch error: the response and the API server's Status.
class HttpError extends Error {
  constructor(
    message: string,
    readonly response: Response,
    readonly json: unknown,
  ) {
    super(message);
  }
}

async function fetchJSON(url: string, method = 'GET', body?: unknown): Promise<unknown> {
  const resp = await fetch(url, {
    method,
    headers: { Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  const json = text === '' ? undefined : JSON.parse(text);
  if (!resp.ok) throw new HttpError((json as { message?: string })?.message ?? resp.statusText, resp, json);
  return json;
}

export const consoleFetchJSON = Object.assign((url: string, method?: string) => fetchJSON(url, method), {
  post: (url: string, data: unknown) => fetchJSON(url, 'POST', data),
  put: (url: string, data: unknown) => fetchJSON(url, 'PUT', data),
  delete: (url: string) => fetchJSON(url, 'DELETE'),
});
