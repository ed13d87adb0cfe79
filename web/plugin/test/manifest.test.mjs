// The built plugin's manifest (dist/plugin-manifest.json, written by the
// console SDK's webpack plugin): its name is the one the operator
// registers, it has one page per view of `knmstate ui`, each under the
// console's Networking section, and every code reference names an
// exposed module that the remote entry serves. Run after `npm run build`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync('dist/plugin-manifest.json', 'utf8'));
const pkg = JSON.parse(readFileSync('package.json', 'utf8')).consolePlugin;
// The views knmstate ui routes to (web/src/route.ts's Route.page).
const uiPages = [...readFileSync('../src/route.ts', 'utf8').match(/page: ([^;]+);/)[1].matchAll(/'([a-z]+)'/g)].map((m) => m[1]);
const byType = (type) => manifest.extensions.filter((e) => e.type === type);

test('name and registration', () => {
  // internal/manifest.ConsolePluginName; the Go side checks the same.
  assert.equal(manifest.name, 'knmstate-console-plugin');
  assert.equal(manifest.name, pkg.name);
  assert.equal(manifest.registrationMethod, 'callback');
  assert.equal(manifest.baseURL, `/api/plugins/${manifest.name}/`);
  assert.ok(manifest.dependencies['@console/pluginAPI'], 'no console version range');
});

test('one page per view of knmstate ui', () => {
  assert.deepEqual(uiPages.sort(), ['policies', 'states', 'topology']);
  const routes = byType('console.page/route');
  assert.deepEqual(routes.map((r) => r.properties.path).sort(), uiPages.map((p) => `/nmstate/${p}`).sort());
  for (const r of routes) {
    // Not exact: /nmstate/policies/NAME opens that policy's drawer.
    assert.equal(r.properties.exact, false, r.properties.path);
  }
});

test('each page in the Networking section of the administrator perspective', () => {
  const routes = byType('console.page/route').map((r) => r.properties.path);
  const nav = byType('console.navigation/href');
  assert.equal(nav.length, routes.length);
  for (const n of nav) {
    assert.equal(n.properties.section, 'networking', n.properties.id);
    assert.equal(n.properties.perspective, 'admin', n.properties.id);
    assert.ok(routes.includes(n.properties.href), `${n.properties.id}: ${n.properties.href} is no page`);
    assert.match(n.properties.name, /^Node network /);
  }
});

test('every code reference names an exposed module the entry serves', () => {
  const exposed = Object.keys(pkg.exposedModules).sort();
  assert.deepEqual(exposed, ['PoliciesPage', 'StatesPage', 'TopologyPage']);
  const refs = JSON.stringify(manifest.extensions).match(/"\$codeRef":"[^"]+"/g).map((r) => r.slice(12, -1));
  for (const ref of refs) {
    const [module] = ref.split('.');
    assert.ok(exposed.includes(module), `$codeRef ${ref}: ${module} is not exposed`);
  }
  // Each exposed module is used by a route.
  for (const m of exposed) assert.ok(refs.some((r) => r.split('.')[0] === m), `${m} exposed but unused`);
  assert.equal(manifest.loadScripts.length, 1);
  const entry = readFileSync(`dist/${manifest.loadScripts[0]}`, 'utf8');
  assert.ok(entry.startsWith(`__load_plugin_entry__("${manifest.name}"`), 'the entry does not register itself with the console');
  for (const m of exposed) assert.match(entry, new RegExp(`\\b${m}:\\(\\)=>`), `the entry does not serve ${m}`);
});

test('the console provides React, its SDK and the topology library', () => {
  const entry = readFileSync(`dist/${manifest.loadScripts[0]}`, 'utf8');
  for (const shared of ['react', '@openshift-console/dynamic-plugin-sdk', '@patternfly/react-topology']) {
    assert.ok(entry.includes(`"${shared}"`), `${shared} is not consumed from the console`);
  }
  // Not bundled: a second React would break the console's hooks.
  assert.doesNotMatch(readFileSync(`dist/${manifest.loadScripts[0]}`, 'utf8'), /node_modules_react_index_js/);
});
