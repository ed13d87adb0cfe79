// build.mjs bundles the web views with esbuild: `node build.mjs` writes
// dist/ (what `knmstate ui` embeds), `--tests` bundles src/**/*.test.ts
// into build/test/ for node's test runner.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const tests = process.argv.includes('--tests');

if (tests) {
  const entries = readdirSync('src').filter((f) => f.endsWith('.test.ts')).map((f) => join('src', f));
  rmSync('build/test', { recursive: true, force: true });
  await esbuild.build({
    entryPoints: entries,
    outdir: 'build/test',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  });
} else {
  // dist/ keeps its placeholder (web/dist/PLACEHOLDER, committed): the Go
  // embed needs a file there on a checkout that never built the bundle.
  for (const f of readdirSync('dist')) if (f !== 'PLACEHOLDER') rmSync(join('dist', f), { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: { app: 'src/main.tsx' },
    outdir: 'dist',
    bundle: true,
    minify: true,
    sourcemap: false,
    format: 'iife',
    target: ['chrome110', 'firefox110', 'safari16'],
    loader: { '.woff': 'file', '.woff2': 'file', '.svg': 'file', '.png': 'file', '.jpg': 'file' },
    assetNames: 'assets/[name]-[hash]',
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
    logLevel: 'warning',
  });
  copyFileSync('src/index.html', 'dist/index.html');
  let total = 0;
  for (const f of Object.keys(result.metafile.outputs)) total += statSync(f).size;
  const js = statSync('dist/app.js').size;
  const css = statSync('dist/app.css').size;
  writeFileSync('dist/size.json', JSON.stringify({ appJs: js, appCss: css, total }) + '\n');
  console.log(`web: bundle dist/app.js ${(js / 1024).toFixed(0)} KiB, dist/app.css ${(css / 1024).toFixed(0)} KiB, all files ${(total / 1024).toFixed(0)} KiB`);
}
