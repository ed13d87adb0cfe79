// k8s.ts talks to the Kubernetes API through `knmstate ui`'s proxy (same
// origin, so no credentials live in the page): lists, watches and writes.

import { useEffect, useState } from 'react';
import type { Resource } from './policy';

export const paths = {
  policies: '/apis/nmstate.io/v1/nodenetworkconfigurationpolicies',
  enactments: '/apis/nmstate.io/v1beta1/nodenetworkconfigurationenactments',
  states: '/apis/nmstate.io/v1beta1/nodenetworkstates',
  nodes: '/api/v1/nodes',
};

// APIError carries the API server's Status: its message and the field
// causes (the admission webhook names each refused field).
export class APIError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly causes: { field?: string; message?: string }[] = [],
  ) {
    super(message);
  }
}

async function check(resp: Response): Promise<unknown> {
  const text = await resp.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!resp.ok) {
    const s = body as { message?: string; details?: { causes?: { field?: string; message?: string }[] } } | undefined;
    throw new APIError(s?.message ?? (text || `${resp.status} ${resp.statusText}`), resp.status, s?.details?.causes ?? []);
  }
  return body;
}

export async function get<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await check(await fetch(path, { signal, headers: { Accept: 'application/json' } }))) as T;
}

export async function create<T extends Resource>(collection: string, obj: T, dryRun = false): Promise<T> {
  const resp = await fetch(collection + (dryRun ? '?dryRun=All' : ''), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(obj),
  });
  return (await check(resp)) as T;
}

export async function replace<T extends Resource>(collection: string, obj: T, dryRun = false): Promise<T> {
  const resp = await fetch(`${collection}/${encodeURIComponent(obj.metadata.name)}` + (dryRun ? '?dryRun=All' : ''), {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(obj),
  });
  return (await check(resp)) as T;
}

export async function remove(collection: string, name: string): Promise<void> {
  await check(await fetch(`${collection}/${encodeURIComponent(name)}`, { method: 'DELETE', headers: { Accept: 'application/json' } }));
}

export interface Watched<T> {
  items: T[];
  loaded: boolean;
  error?: string;
}

interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T & { code?: number; message?: string };
}

// useWatch lists a collection and keeps it current with a watch, so what
// changes on a node shows without a reload. A watch that ends is resumed
// from the last resourceVersion seen; one that expired (410) lists anew.
export function useWatch<T extends Resource>(path: string): Watched<T> {
  const [state, setState] = useState<Watched<T>>({ items: [], loaded: false });
  useEffect(() => {
    const abort = new AbortController();
    const items = new Map<string, T>();
    const publish = (error?: string) =>
      setState({
        items: [...items.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name, undefined, { numeric: true })),
        loaded: true,
        error,
      });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    (async () => {
      let rv = '';
      while (!abort.signal.aborted) {
        try {
          if (rv === '') {
            const list = await get<{ metadata: { resourceVersion: string }; items: T[] }>(path, abort.signal);
            items.clear();
            for (const i of list.items) items.set(i.metadata.name, i);
            rv = list.metadata.resourceVersion;
            publish();
          }
          const started = Date.now();
          const resp = await fetch(`${path}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, { signal: abort.signal });
          if (!resp.ok || !resp.body) {
            await check(resp);
            throw new Error(`watch ${path}: no body`);
          }
          const reader = resp.body.getReader();
          const decoder = new TextDecoder();
          let buf = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += decoder.decode(value, { stream: true });
            let nl: number;
            let changed = false;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl);
              buf = buf.slice(nl + 1);
              if (line.trim() === '') continue;
              const ev = JSON.parse(line) as WatchEvent<T>;
              if (ev.type === 'ERROR') {
                // 410 Gone: the resourceVersion is too old; list again.
                rv = '';
                break;
              }
              rv = ev.object.metadata.resourceVersion ?? rv;
              if (ev.type === 'BOOKMARK') continue;
              if (ev.type === 'DELETED') items.delete(ev.object.metadata.name);
              else items.set(ev.object.metadata.name, ev.object);
              changed = true;
            }
            if (changed) publish();
            if (rv === '') break;
          }
          // A watch the server (or a proxy) ends at once is not retried
          // in a tight loop.
          if (Date.now() - started < 1000) await sleep(1000);
        } catch (e) {
          if (abort.signal.aborted) return;
          publish(e instanceof Error ? e.message : String(e));
          rv = '';
          await sleep(2000);
        }
      }
    })();
    return () => abort.abort();
  }, [path]);
  return state;
}
