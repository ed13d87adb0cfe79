// k8s.ts is the console plugin's API access layer: the same exports as
// web/src/k8s.ts (which the plugin build replaces with this module), but
// lists and watches come from the console's own watch hooks, and writes
// go through the console's fetch (its API proxy, CSRF token and
// impersonation), so the views run with the console user's credentials.

import { useMemo } from 'react';
import { consoleFetchJSON, useK8sWatchResource } from '@openshift-console/dynamic-plugin-sdk';
import type { Resource } from '../../src/policy';

export const paths = {
  policies: '/apis/nmstate.io/v1/nodenetworkconfigurationpolicies',
  enactments: '/apis/nmstate.io/v1beta1/nodenetworkconfigurationenactments',
  states: '/apis/nmstate.io/v1beta1/nodenetworkstates',
  nodes: '/api/v1/nodes',
};

// The console serves the API server under this prefix.
const apiPrefix = '/api/kubernetes';

const kinds: Record<string, string> = {
  nodenetworkconfigurationpolicies: 'NodeNetworkConfigurationPolicy',
  nodenetworkconfigurationenactments: 'NodeNetworkConfigurationEnactment',
  nodenetworkstates: 'NodeNetworkState',
  nodes: 'Node',
};

// gvkOf turns one of the paths above into the group, version and kind
// the console's watch hook wants.
export function gvkOf(path: string): { group: string; version: string; kind: string } {
  const parts = path.split('/').filter((p) => p !== '');
  const [group, version, plural] = parts[0] === 'api' ? ['core', parts[1], parts[2]] : [parts[1], parts[2], parts[3]];
  const kind = kinds[plural];
  if (kind === undefined) throw new Error(`no kind known for ${path}`);
  return { group, version, kind };
}

export class APIError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly causes: { field?: string; message?: string }[] = [],
  ) {
    super(message);
  }
}

// apiError turns the console fetch's error (which carries the response and
// the API server's Status as json) into the views' APIError, so the form
// still shows the admission webhook's errors next to their fields.
function apiError(e: unknown): APIError {
  const err = e as { message?: string; response?: { status?: number }; json?: { message?: string; details?: { causes?: { field?: string; message?: string }[] } } };
  return new APIError(err.json?.message ?? err.message ?? String(e), err.response?.status ?? 0, err.json?.details?.causes ?? []);
}

async function call<T>(f: () => Promise<unknown>): Promise<T> {
  try {
    return (await f()) as T;
  } catch (e) {
    throw apiError(e);
  }
}

export function get<T>(path: string): Promise<T> {
  return call<T>(() => consoleFetchJSON(apiPrefix + path));
}

export function create<T extends Resource>(collection: string, obj: T, dryRun = false): Promise<T> {
  return call<T>(() => consoleFetchJSON.post(apiPrefix + collection + (dryRun ? '?dryRun=All' : ''), obj));
}

export function replace<T extends Resource>(collection: string, obj: T, dryRun = false): Promise<T> {
  return call<T>(() => consoleFetchJSON.put(`${apiPrefix}${collection}/${encodeURIComponent(obj.metadata.name)}` + (dryRun ? '?dryRun=All' : ''), obj));
}

export async function remove(collection: string, name: string): Promise<void> {
  await call<unknown>(() => consoleFetchJSON.delete(`${apiPrefix}${collection}/${encodeURIComponent(name)}`));
}

export interface Watched<T> {
  items: T[];
  loaded: boolean;
  error?: string;
}

// useWatch is the console's watch of a cluster-scoped collection, sorted
// by name as the views expect.
export function useWatch<T extends Resource>(path: string): Watched<T> {
  // One resource object per path: the hook watches anew when it changes.
  const resource = useMemo(() => ({ groupVersionKind: gvkOf(path), isList: true, namespaced: false }), [path]);
  const [data, loaded, error] = useK8sWatchResource<T[]>(resource);
  // The same Watched until the data changes, so the views' memos hold.
  return useMemo(() => {
    const items = [...(data ?? [])].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name, undefined, { numeric: true }));
    const message = error ? (error instanceof Error ? error.message : String((error as { message?: string }).message ?? error)) : undefined;
    return { items, loaded: loaded || !!error, error: message };
  }, [data, loaded, error]);
}
