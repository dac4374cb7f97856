'use strict';
// Saving and loading (the runtime's index.js wires it): dicts of tensors as
// torch.save writes them, to files and Buffers, NumPy's .npy/.npz, and
// TorchScript modules to and from Buffers.
module.exports = function defineSerialize(ct, rt) {
  const { api } = rt;

  // torch.save(stateDict, path) / torch.load(path) for dicts of tensors (a
  // Module's stateDict(), a Map or a plain object): the files C and Python read.
  ct.save = function (dict, path) {
    const entries = [...(dict instanceof Map ? dict : Object.entries(dict))];
    api.save_dict(path, entries.map(([k]) => k), entries.map(([, t]) => t));
  };
  function readDictMap(d) { // the entries of a NEW tensor dict as a Map; the dict is freed
    try {
      const n = api.tensor_dict_size(d);
      const out = new Map();
      for (let i = 0; i < n; i++) out.set(api.tensor_dict_key(d, i), api.tensor_dict_get(d, i));
      return out;
    } finally { d.dispose(); }
  }
  ct.load = (path) => readDictMap(api.load_dict(path));
  // The same bytes in a Buffer (services keep models in object stores):
  // ct.saveToBuffer(stateDict) / ct.loadFromBuffer(buf); NumPy's .npy/.npz.
  function newDict(dict) {
    const d = api.tensor_dict_new();
    for (const [k, t] of (dict instanceof Map ? dict : Object.entries(dict))) api.tensor_dict_set(d, k, t);
    return d;
  }
  function withDict(dict, f) { const d = newDict(dict); try { return f(d); } finally { d.dispose(); } }
  ct.saveToBuffer = (dict) => withDict(dict, (d) => api.tensor_dict_save_to_buffer(d));
  ct.loadFromBuffer = (buf) => readDictMap(api.load_dict_from_buffer(buf));
  ct.saveNpy = (t, path) => api.npy_save(path, t);
  ct.loadNpy = (path) => api.npy_load(path);
  ct.npyToBuffer = (t) => api.npy_save_to_buffer(t);
  ct.npyFromBuffer = (buf) => api.npy_load_from_buffer(buf);
  ct.saveNpz = (dict, path) => withDict(dict, (d) => api.npz_save(path, d));
  ct.loadNpz = (path) => readDictMap(api.npz_load(path));
  ct.npzToBuffer = (dict) => withDict(dict, (d) => api.npz_save_to_buffer(d));
  ct.npzFromBuffer = (buf) => readDictMap(api.npz_load_from_buffer(buf));
  // TorchScript modules (ct.capi.Module) as torch.jit.save(m, BytesIO) writes
  // them, and back with every check ctorch_module_load makes (flags 0: bytes
  // from strangers; else the CTORCH_MODULE_LOAD_ALLOW_* bits).
  ct.moduleToBuffer = (m) => api.module_save_to_buffer(m);
  ct.moduleFromBuffer = (buf, opts = {}) =>
    api.module_load_from_buffer(buf, opts.mapLocation ?? null, opts.flags ?? 0);

  return { readDictMap };
};
