'use strict';
// The declarations (index.d.ts) against the loaded package: every value name
// they declare (functions, classes, constants, namespaces, class members)
// exists with that kind, and every property the package, its namespaces and
// its classes' prototypes have is declared. The operators' and ct.capi's
// declarations are generated from the same api.json as the code, but the
// runtime's own names are declared by hand (runtime.d.ts): this ties them.
// Run by tests/bindings/node_tsc.sh PKG REPO names (typescript from npm).
const path = require('path');
const ts = require(process.env.CTORCH_TYPESCRIPT);
const pkg = process.env.CTORCH_NODE_PKG;
const ct = require(pkg);

const file = path.join(pkg, 'index.d.ts');
const program = ts.createProgram([file], {
  noEmit: true, strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10, lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
  typeRoots: [path.join(process.env.CTORCH_TYPESCRIPT, '..', '@types')], types: ['node'],
});
const diags = ts.getPreEmitDiagnostics(program);
if (diags.length) {
  console.error(ts.formatDiagnostics(diags.slice(0, 10), { getCanonicalFileName: (f) => f, getCurrentDirectory: () => '.', getNewLine: () => '\n' }));
  process.exit(1);
}
const checker = program.getTypeChecker();
const F = ts.SymbolFlags;
const problems = [];
let nValues = 0, nMembers = 0;
// Instance fields the constructors set (not on the prototype).
const FIELDS = new Set(['DataLoader.epoch', 'CtorchError.status', 'CtorchError.statusName', 'CtorchError.stack',
  'CtorchError.cause']);
const isInternal = (k) => k.startsWith('_') || k === 'constructor';

function members(sym, C, where) {
  const type = checker.getDeclaredTypeOfSymbol(sym);
  const declared = new Set();
  for (const p of type.getProperties()) {
    const name = p.name;
    if (name.startsWith('__@')) { // a symbol-keyed member: [Symbol.dispose] and kin
      const key = name.slice(3).split('@')[0];
      const s = Symbol[key];
      if (typeof s === 'symbol' && typeof C.prototype[s] !== 'function') problems.push(`${where}[Symbol.${key}]: declared, missing`);
      nMembers++;
      continue;
    }
    declared.add(name);
    nMembers++;
    if (!(name in C.prototype) && !FIELDS.has(`${sym.name}.${name}`)) problems.push(`${where}.${name}: declared, missing`);
    else if ((p.flags & F.Method) && typeof C.prototype[name] !== 'function') problems.push(`${where}.${name}: declared a method, is ${typeof C.prototype[name]}`);
  }
  for (let proto = C.prototype; proto && proto !== Object.prototype && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto)) {
    for (const k of Object.getOwnPropertyNames(proto)) {
      if (!isInternal(k) && !declared.has(k)) problems.push(`${where}.${k}: on the prototype, not declared`);
    }
  }
}

function walk(sym, obj, where) {
  const declared = new Set();
  for (const e of checker.getExportsOfModule(sym)) {
    const s = e.flags & F.Alias ? checker.getAliasedSymbol(e) : e;
    if (!(s.flags & F.Value)) continue; // a type only
    declared.add(e.name);
    nValues++;
    const v = obj[e.name];
    const at = `${where}.${e.name}`;
    if (v === undefined) { problems.push(`${at}: declared, missing`); continue; }
    if (s.flags & (F.Function | F.Class)) {
      if (typeof v !== 'function') problems.push(`${at}: declared a ${s.flags & F.Class ? 'class' : 'function'}, is ${typeof v}`);
      else if (s.flags & F.Class) members(s, v, at);
    } else if (s.flags & F.ValueModule) {
      if (typeof v !== 'object') problems.push(`${at}: declared a namespace, is ${typeof v}`);
      else walk(s, v, at);
    }
  }
  for (const k of Object.keys(obj)) if (!declared.has(k) && !isInternal(k)) problems.push(`${where}.${k}: in the package, not declared`);
}

walk(checker.getSymbolAtLocation(program.getSourceFile(file)), ct, 'ct');
console.log(`${nValues} declared values and ${nMembers} class members checked against the package`);
if (problems.length) {
  console.error(`${problems.length} mismatches:\n  ${problems.slice(0, 60).join('\n  ')}`);
  process.exit(1);
}
console.log('declarations match the package');
