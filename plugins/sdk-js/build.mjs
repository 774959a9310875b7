// node build.mjs TOOLS_DIR ENTRY.js WORLD OUT.wasm [WIT_DIR]
//
// Builds one JS plugin into a component with jco's componentize (bundling the
// entry with the SDK, then componentize-js/StarlingMonkey), WASI features off
// (-d all: the plugin gets no clocks, random, stdio or http imports beyond what
// the engine itself needs). WIT_DIR defaults to wit/ of the current directory.
//
// Why a script and not the `jco componentize` CLI: jco 1.35's own wasm tools
// read wit/ through @bytecodealliance/preview2-shim, whose 0.25+ releases start
// with no preopened directory, so the CLI cannot open any path ("failed to get
// path metadata"). This preopens `/` on every copy of the shim before calling
// the same componentize function.

import { readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [tools, entry, world, out, witDir = 'wit'] = process.argv.slice(2);
if (!out) {
  console.error('usage: node build.mjs TOOLS_DIR ENTRY.js WORLD OUT.wasm [WIT_DIR]');
  process.exit(2);
}
const modules = resolve(tools, 'node_modules');

function shims(dir, found = []) {
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    if (!name.isDirectory()) continue;
    const path = join(dir, name.name);
    if (name.name === 'preview2-shim') {
      const fs = join(path, 'dist', 'nodejs', 'filesystem.js');
      if (existsSync(fs)) found.push(fs);
    } else if (name.name === 'node_modules' || name.name.startsWith('@') || dir.endsWith('node_modules')
      || dir.endsWith('@bytecodealliance')) {
      shims(path, found);
    }
  }
  return found;
}

for (const fs of shims(modules)) {
  const shim = await import(pathToFileURL(fs).href);
  shim._setPreopens?.({ '/': '/' });
}
const { componentize } = await import(pathToFileURL(join(modules, '@bytecodealliance/jco/dist/cmd/componentize.js')).href);
await componentize(resolve(entry), { wit: resolve(witDir), worldName: world, disable: ['all'], bundle: true, out: resolve(out) });
