// build.mjs bundles the browser test page (test/host) into build/host/
// (after webpack built the plugin, whose size it reports):
// one React (this package's) for the page and for the views' hooks.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
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

// The plugin's size (dist/, just built by webpack), as the console fetches it.
const js = readdirSync('dist').filter((f) => f.endsWith('.js'));
const total = js.reduce((n, f) => n + statSync(`dist/${f}`).size, 0);
const entry = JSON.parse(readFileSync('dist/plugin-manifest.json', 'utf8')).loadScripts[0];
console.log(`web/plugin: ${js.length} scripts, ${(total / 1024).toFixed(0)} KiB in all, the entry ${entry} ${(statSync(`dist/${entry}`).size / 1024).toFixed(1)} KiB`);
