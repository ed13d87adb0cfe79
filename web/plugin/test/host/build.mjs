// build.mjs bundles the browser test page (test/host) into build/host/:
// one React (this package's) for the page and for the views' hooks.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';

rmSync('build/host', { recursive: true, force: true });
mkdirSync('build/host', { recursive: true });
const pkg = (name) => resolve('node_modules', name);
await esbuild.build({
  entryPoints: { host: 'test/host/host.tsx' },
  outdir: 'build/host',
  bundle: true,
  format: 'iife',
  target: ['chrome110'],
  loader: { '.woff': 'file', '.woff2': 'file', '.svg': 'file', '.png': 'file', '.jpg': 'file' },
  define: { 'process.env.NODE_ENV': '"production"' },
  alias: { react: pkg('react'), 'react-dom': pkg('react-dom'), yaml: pkg('yaml') },
  logLevel: 'warning',
});
copyFileSync('test/host/index.html', 'build/host/index.html');
