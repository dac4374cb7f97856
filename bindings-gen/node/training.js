'use strict';
// Training (the runtime's index.js wires it): the optimizers and the data
// loader, the generated classes with JS constructors, and torch.nn.utils'
// clipping and torch.nn.init.
const input = require('./input');

module.exports = function defineTraining(ct, rt) {
  const { api, E, F, check, hh } = rt;

  // ---- optimizers and data: the generated classes with JS constructors ---------
  const OPT_KINDS = Object.fromEntries(Object.entries(E.ctorch_optimizer_kind).map(([k, v]) => [k.slice(13).toLowerCase(), v]));
  class Optimizer extends api.Optimizer {
    constructor(kind, params, options = {}) {
      const opts = api.optim_options_default_v2(OPT_KINDS[kind]);
      const where = `ctorch_optimizer_new_v2: argument 'options'`;
      const num = (k, v) => {
        // koffi would refuse it naming no function or field.
        if (typeof v !== 'number' && typeof v !== 'boolean') {
          throw new TypeError(`${where}: option '${k}' must be a number, got ${input.describe(v)} ${String(v)}`);
        }
        return typeof v === 'boolean' ? Number(v) : v; // koffi aborts the process on a boolean in an int field
      };
      for (const [k, v] of Object.entries(options)) {
        if (k === 'betas') {
          if (!Array.isArray(v) || v.length !== 2) throw new TypeError(`${where}: option 'betas' must be [beta1, beta2]`);
          opts.beta1 = num('betas', v[0]); opts.beta2 = num('betas', v[1]);
        } else if (k in opts) opts[k] = num(k, v);
        else throw new TypeError(`${where}: unknown optimizer option '${k}'`);
      }
      // An nn.Module (its ._m handle): every parameter, recursive, in
      // parameters()'s order (ctorch_optimizer_new_from_module_v2); else a list.
      const module = params && !Array.isArray(params) && params._m instanceof api.NnModule ? params._m : null;
      super((module ? api.optimizer_new_from_module_v2(OPT_KINDS[kind], module, opts)
        : api.optimizer_new_v2(OPT_KINDS[kind], params, opts))._take());
    }
    zeroGrad(setToNone = true) { this.zero_grad(setToNone); }
  }
  ct.optim = {
    SGD: (p, o) => new Optimizer('sgd', p, o), Adam: (p, o) => new Optimizer('adam', p, o),
    AdamW: (p, o) => new Optimizer('adamw', p, o), RMSprop: (p, o) => new Optimizer('rmsprop', p, o),
    Adagrad: (p, o) => new Optimizer('adagrad', p, o),
  };
  class DataLoader extends api.DataLoader {
    constructor(data, targets, options = {}) {
      const opts = input.loaderOptions(options); // unknown options and batch sizes like 0 or 1.5 refused
      super(api.data_loader_new(data, targets || null, opts.batchSize, opts.shuffle, opts.seed, opts.dropLast)._take());
      if (opts.transform) this.set_transform(opts.transform); // per item; the loader keeps a reference
      this.epoch = 0;
    }
    // Each iteration is an epoch with a cursor of its own, as each iter() of a
    // PyTorch DataLoader: the C loader has one cursor, so an iterator that
    // finds it elsewhere (another iteration moved it) seeks back to its place
    // (ctorch_data_loader_seek replays the epoch's order). for await: promise.js.
    _cursor() {
      const c = { epoch: this.epoch++, batch: 0 };
      this.start_epoch(BigInt(c.epoch));
      return c;
    }
    _seekTo(c, hv) {
      const e = new BigUint64Array(1), b = new BigInt64Array(1);
      check(F.ctorch_data_loader_position(e, b, hv));
      if (e[0] !== BigInt(c.epoch) || b[0] !== BigInt(c.batch)) check(F.ctorch_data_loader_seek(hv, BigInt(c.epoch), c.batch));
    }
    * [Symbol.iterator]() {
      const c = this._cursor();
      for (;;) {
        this._seekTo(c, hh(this));
        const [has, x, y] = this.next();
        if (!has) return;
        c.batch++;
        yield [x, y];
      }
    }
  }
  ct.data = {
    readMnist(dir, train = true) { return api.data_mnist_read_dir(dir, train); },
    DataLoader,
  };
  ct.nn = ct.nn || {};
  // torch.nn.utils' clipping over an nn.Module (ctorch_nn_module_clip_grad_*) or a list of parameters.
  const asModule = (p) => (p && !Array.isArray(p) && p._m instanceof api.NnModule ? p._m : null);
  ct.nn.utils = {
    clipGradNorm_(params, maxNorm, normType = 2.0, errorIfNonfinite = false) {
      const m = asModule(params);
      return m ? api.nn_module_clip_grad_norm_(m, maxNorm, normType, errorIfNonfinite)
        : api.clip_grad_norm_(params, maxNorm, normType, errorIfNonfinite);
    },
    clipGradValue_(params, clipValue) {
      const m = asModule(params);
      return m ? api.nn_module_clip_grad_value_(m, clipValue) : api.clip_grad_value_(params, clipValue);
    },
  };
  ct.nn.init = {
    uniform_(t, a, b) { api.init_uniform_(t, a, b); return t; },
    normal_(t, mean, std) { api.init_normal_(t, mean, std); return t; },
    zeros_(t) { api.init_zeros_(t); return t; },
  };

  return { DataLoader };
};
