// host.tsx is the browser test page's stand-in for the console: it loads
// the plugin as the console does (plugin-manifest.json, the entry script
// from /api/plugins/NAME/, the entry's callback), gives the remote
// container the shared modules the console provides (React, the SDK, the
// topology library), gets the exposed module named in ?module=, and
// renders its default export. window.knmstateHost says how it went.
// PatternFly's styles, which the console has on every page.
import '@patternfly/patternfly/patternfly.css';
import '@patternfly/react-topology/dist/esm/css/topology-components.css';
import * as React from 'react';
import { createRoot } from 'react-dom/client';
import * as topology from '@patternfly/react-topology';
import * as sdk from './sdk';

interface Container {
  init(scope: unknown): Promise<void>;
  get(module: string): Promise<() => { default?: React.ComponentType }>;
}

declare global {
  interface Window {
    __load_plugin_entry__?: (name: string, container: Container) => void;
    knmstateHost?: { module: string; state: 'loading' | 'rendered' | 'failed'; error?: string };
  }
}

const provided = (version: string, mod: unknown) => ({ [version]: { get: () => Promise.resolve(() => mod), loaded: 1, from: 'knmstate-test-host', eager: true } });

async function main() {
  const params = new URLSearchParams(window.location.search);
  const module = params.get('module') ?? '';
  const base = '/api/plugins/knmstate-console-plugin/';
  window.knmstateHost = { module, state: 'loading' };
  const manifest = (await (await fetch(base + 'plugin-manifest.json')).json()) as { name: string; loadScripts: string[] };
  const container = await new Promise<Container>((resolve, reject) => {
    window.__load_plugin_entry__ = (name, c) => (name === manifest.name ? resolve(c) : reject(new Error(`entry of ${name}`)));
    const s = document.createElement('script');
    s.src = base + manifest.loadScripts[0];
    s.onerror = () => reject(new Error(`loading ${s.src}`));
    document.head.appendChild(s);
  });
  await container.init({
    react: provided('18.3.1', React),
    '@patternfly/react-topology': provided('6.4.0', topology),
    '@openshift-console/dynamic-plugin-sdk': provided('4.22.0', sdk),
  });
  const factory = await container.get(module);
  const Page = factory().default;
  if (typeof Page !== 'function') throw new Error(`module ${module} has no component as its default export`);
  class Boundary extends React.Component<{ children: React.ReactNode }, { error?: Error }> {
    state: { error?: Error } = {};
    static getDerivedStateFromError(error: Error) {
      return { error };
    }
    componentDidCatch(error: Error) {
      window.knmstateHost = { module, state: 'failed', error: String(error?.stack ?? error) };
    }
    render() {
      return this.state.error ? <pre data-test="host-error">{String(this.state.error)}</pre> : this.props.children;
    }
  }
  createRoot(document.getElementById('root')!).render(
    <Boundary>
      <Page />
    </Boundary>,
  );
  window.knmstateHost = { module, state: 'rendered' };
}

main().catch((e) => {
  window.knmstateHost = { module: window.knmstateHost?.module ?? '', state: 'failed', error: String(e?.stack ?? e) };
});
