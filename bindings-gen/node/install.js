// npm's install step (package.json "install"). Finds libctorch in the order
// docs/packages.md gives; where none is installed, builds it from the sources
// this package carries (native/src) into native/, and where the library found
// was built against another libtorch release than this package was generated
// for, generates the package's binding again from that library's api.json.
// A package inside a build tree (build_config.json) or without carried
// sources has nothing to do: index.js finds the library when it loads.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const here = __dirname;
const native = path.join(here, 'native');
const src = path.join(native, 'src');
if (fs.existsSync(path.join(here, 'build_config.json')) || !fs.existsSync(src)) process.exit(0);

const python = process.env.PYTHON || 'python3';
const version = require('./package.json').version;
let found;
try {
  const out = execFileSync(python, [path.join(src, 'bindings-gen', 'ctorch_native.py'), 'ensure', '--source', src,
    '--prefix', native, '--version', version], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  found = JSON.parse(out.trim().split('\n').pop());
} catch (e) {
  console.error(`ctorch: no libctorch for this package (${e.message.split('\n')[0]}); ` +
    'the message above says what is missing (docs/packages.md in ctorch\'s sources has the order it looks in)');
  process.exit(1);
}
const capi = require('./capi');
const api = found.api_json && JSON.parse(fs.readFileSync(found.api_json, 'utf8'));
if (api && api.abi_hash !== capi.ABI_HASH) {
  console.error(`ctorch: the library found is ctorch ${api.ctorch_version} for libtorch ${api.torch_version}; ` +
    `this package was generated for libtorch ${capi.TORCH_VERSION}: generating it again from ${found.api_json}`);
  const tmp = fs.mkdtempSync(path.join(native, 'gen-'));
  execFileSync(python, [path.join(src, 'bindings-gen', 'generate_bindings.py'), '--api', found.api_json,
    '--lang', 'node', '--out', tmp], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (const f of ['capi.js', 'ops.js', 'api.js', 'nn_classes.js', 'index.d.ts']) {
    fs.copyFileSync(path.join(tmp, f), path.join(here, f));
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}
if (found.how === 'built') {
  // The library the package's own loader finds first after $CTORCH_LIB (index.js).
  fs.writeFileSync(path.join(native, 'lib.json'), JSON.stringify({ libdir: found.libdir }) + '\n');
  fs.rmSync(path.join(src, 'build-native'), { recursive: true, force: true });
}
