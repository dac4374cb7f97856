// The hand-written runtime (index.js and the modules it requires), declared by hand;
// bindings-gen/ctorch_gen/emit_node_dts.py appends the generated part (the
// operators, ct.capi, the module classes, the dtypes) to make index.d.ts.
//
// Self-contained: no reference to Node's types, so a
// project without @types/node compiles against it (tests/bindings/node_tsc.sh
// checks one). What it needs of them is declared here: Buffer is this file's
// alias of Uint8Array (Node's Buffer is one, so Buffers pass where it is
// taken; the global Buffer of @types/node is not touched), and the disposal
// symbols and Disposable are declared as lib.esnext.disposable and
// @types/node declare them.
type Buffer = Uint8Array;
declare global {
  interface SymbolConstructor {
    readonly dispose: unique symbol;
    readonly asyncDispose: unique symbol;
  }
  // `using` needs these (index.js polyfills the symbols on Node 18).
  interface Disposable { [Symbol.dispose](): void }
  interface AsyncDisposable { [Symbol.asyncDispose](): PromiseLike<void> }
}

/** A dtype (ct.float32): value is ctorch_dtype's, name torch's. */
export interface DType { readonly value: number; readonly name: string; toString(): string }
export interface Layout { readonly value: number }
export interface MemoryFormat { readonly value: number }
/** 'cpu', 'cuda:1', or ctorch_device's fields. */
export type DeviceLike = string | { type: number; index: number };
declare const floatBrand: unique symbol;
/** ct.float(2): a FLOAT Scalar although integral. */
export interface FloatScalar { readonly [floatBrand]: true; readonly v: number }
/** An integer-valued number is an INT Scalar, others FLOAT; booleans BOOL. */
export type Scalar = number | boolean | bigint | FloatScalar;
export type NestedData = number | boolean | bigint | readonly NestedData[];
/** What ct.save and loadStateDict take (a null entry is refused with an error, as C refuses it). */
export type StateDict = ReadonlyMap<string, Tensor | null> | { readonly [name: string]: Tensor | null };
export interface BackwardOptions {
  gradient?: Tensor | null; retainGraph?: boolean; createGraph?: boolean; inputs?: readonly Tensor[] | null;
}

export declare class CtorchError extends Error {
  constructor(status: number, message: string);
  /** ctorch_status's value (its code bits) and name. */
  readonly status: number;
  readonly statusName: string;
}

/** A tensor: native memory, freed by dispose(), ct.scope, `using`, or a finalizer. */
export declare class Tensor {
  constructor(handle: bigint);
  readonly handle: bigint;
  readonly disposed: boolean;
  readonly shape: ReturnType<typeof capi.tensor_sizes>;
  readonly dtype: DType;
  requiresGrad: boolean;
  readonly grad: ReturnType<typeof capi.tensor_grad>;
  stride(): ReturnType<typeof capi.tensor_strides>;
  numel(): number;
  /** The value of a one-element tensor as a number (a ct.bool tensor's: 1 or 0). */
  item(): number;
  /** The value of a one-element tensor as a boolean (nonzero: true). */
  itemBool(): boolean;
  toTypedArray(): Float32Array | Float64Array | BigInt64Array | Int32Array | Int16Array | Int8Array | Uint8Array;
  /** Nested arrays of numbers (booleans for ct.bool). */
  toArray(): any;
  backward(opts?: BackwardOptions): void;
  /** backward() on a worker thread (README.md, "Promises"). */
  backwardAsync(opts?: BackwardOptions): Promise<void>;
  detach(): Tensor;
  to(dtype: DType): Tensor;
  requiresGrad_(v?: boolean): this;
  toString(): string;
  dispose(): void;
  [Symbol.dispose](): void;
}
export interface Tensor extends TensorMethods {}

/** Base of the handle classes of ct.capi (not exported by the package). */
declare class Handle {
  readonly handle: bigint;
  dispose(): void;
  [Symbol.dispose](): void;
  /** Waits for the Promise calls pending on the object, then disposes it. */
  [Symbol.asyncDispose](): Promise<void>;
}

export declare const ops: { [group: string]: any };
/** Operators that do not check their input (api.json ops_json.unsafe): a wrong argument can crash the process. */
export declare const unchecked: { [group: string]: any };
export declare const lib: { readonly path: string; readonly F: any; readonly T: any; readonly koffi: any };
export declare const config: { gcThresholdBytes: number; checkEvery: number };
export declare const version: string;
export declare const abiHash: string;
export declare const strided: Layout;
export declare const contiguous_format: MemoryFormat;
export declare const preserve_format: MemoryFormat;
export declare const channels_last: MemoryFormat;

/**
 * Runs fn; every tensor made inside is disposed when it ends, except those it
 * returns (a tensor, or arrays / plain objects of them). An async fn (one
 * returning a Promise) keeps the scope open until the Promise settles, and
 * only tensors made in its own async context belong to it.
 */
export declare function scope<T>(fn: () => Promise<T>): Promise<T>;
export declare function scope<T>(fn: () => T): T;
/** Takes t out of the current scope. */
export declare function keep<T extends Tensor>(t: T): T;
/** What a synchronous function returns: a Promise is refused (grad mode is per thread). */
export type NotPromise<T> = T extends PromiseLike<unknown> ? never : T;
/** Runs fn without recording a graph; an async fn (or one returning a Promise) is refused with a TypeError. */
export declare function noGrad<T>(fn: () => NotPromise<T>): T;
export declare function inferenceMode<T>(fn: () => NotPromise<T>): T;
export declare function memoryBytes(deviceType?: number): number;
export declare function flushFrees(): void;
export declare function float(v: number): FloatScalar;
export declare function tensor(data: NestedData | ArrayBufferView,
  opts?: { dtype?: DType; requiresGrad?: boolean; shape?: readonly number[] }): Tensor;
export declare function manualSeed(seed: number | bigint): void;
export declare function setNumThreads(n: number): void;
export declare function save(dict: StateDict, path: string): void;
export declare function load(path: string): Map<string, Tensor>;
/** ct.save / ct.load on a worker thread. */
export declare function saveAsync(dict: StateDict, path: string): Promise<void>;
export declare function loadAsync(path: string): Promise<Map<string, Tensor>>;
/** ct.save / ct.load through memory: the same bytes as the file (torch.save(sd, BytesIO)). */
export declare function saveToBuffer(dict: StateDict): Buffer;
export declare function loadFromBuffer(buf: Uint8Array): Map<string, Tensor>;
/** NumPy's .npy (numpy.save's bytes) and .npz (numpy.savez / savez_compressed read). */
export declare function saveNpy(t: Tensor, path: string): void;
export declare function loadNpy(path: string): Tensor;
export declare function npyToBuffer(t: Tensor): Buffer;
export declare function npyFromBuffer(buf: Uint8Array): Tensor;
export declare function saveNpz(dict: StateDict, path: string): void;
export declare function loadNpz(path: string): Map<string, Tensor>;
export declare function npzToBuffer(dict: StateDict): Buffer;
export declare function npzFromBuffer(buf: Uint8Array): Map<string, Tensor>;
/** TorchScript modules through memory: torch.jit.save(m, BytesIO)'s bytes, and back (checked as ctorch_module_load; flags 0 for bytes from strangers). */
export declare function moduleToBuffer(m: capi.Module): Buffer;
export declare function moduleFromBuffer(buf: Uint8Array, opts?: { mapLocation?: DeviceLike | null; flags?: number }): capi.Module;
/** torch.set_printoptions for toString()/inspect (Python's str(tensor)); null restores a default. */
export declare function setPrintOptions(opts: { precision?: number | null; threshold?: number | null;
  edgeitems?: number | null; linewidth?: number | null; sciMode?: boolean | null }): void;
/** One C function (koffi's raw declaration: handles as bigint, out-arrays) on a worker thread. */
export declare function callAsync(cName: string, ...args: unknown[]): Promise<void>;
export declare function errorOf(status: number): CtorchError;

export declare class Generator extends capi.Generator {
  constructor(device?: DeviceLike);
  manualSeed(seed: number | bigint): this;
  initialSeed(): ReturnType<typeof capi.generator_initial_seed>;
}

export interface Optimizer extends capi.Optimizer { zeroGrad(setToNone?: boolean): void }
export type OptimizerOptions = { [K in keyof capi.ctorch_optim_options_v2]?: number } & { betas?: [number, number] };
export namespace optim {
  function SGD(params: readonly Tensor[] | nn.Module, options?: OptimizerOptions): Optimizer;
  function Adam(params: readonly Tensor[] | nn.Module, options?: OptimizerOptions): Optimizer;
  function AdamW(params: readonly Tensor[] | nn.Module, options?: OptimizerOptions): Optimizer;
  function RMSprop(params: readonly Tensor[] | nn.Module, options?: OptimizerOptions): Optimizer;
  function Adagrad(params: readonly Tensor[] | nn.Module, options?: OptimizerOptions): Optimizer;
}

export namespace data {
  /** The IDX files of MNIST / Fashion-MNIST in dir (gzip or not): [images uint8 [N,28,28], labels int64 [N]]. */
  function readMnist(dir: string, train?: boolean): ReturnType<typeof capi.data_mnist_read_dir>;
  /** Y: the targets' type in a batch (Tensor when the loader has targets, null without). */
  class DataLoader<Y extends Tensor | null = Tensor | null> extends capi.DataLoader {
    constructor(data: Tensor, targets?: Y, opts?: {
      batchSize?: number | bigint; shuffle?: boolean; seed?: number | bigint; dropLast?: boolean;
      transform?: Parameters<capi.DataLoader['set_transform']>[0];
    });
    /** The epoch the next iteration starts (its shuffle order). */
    epoch: number;
    [Symbol.iterator](): IterableIterator<[Tensor, Y]>;
    /** for await: the batches of one epoch, each read on a worker thread. */
    [Symbol.asyncIterator](): AsyncIterableIterator<[Tensor, Y]>;
    nextAsync(): Promise<[Tensor, Y] | null>;
  }
}

/** Inputs of forward: tensors, nested arrays of them (LSTM's [h, c]), a trailing kwargs object. */
export type ForwardArg = Tensor | null | readonly ForwardArg[] | { [kwarg: string]: unknown };

declare class Builtin extends nn.Module {
  forward(...inputs: ForwardArg[]): any;
}

export namespace nn {
  /** torch.nn.Module: assign modules and Parameters to properties in the constructor; define forward. */
  class Module {
    constructor();
    readonly handle: bigint;
    registerModule<M extends Module>(name: string, m: M): M;
    registerParameter(name: string, p: Parameter | null): Parameter | null;
    registerBuffer(name: string, t: Tensor | null, persistent?: boolean): Tensor | null;
    tensor(name: string): ReturnType<typeof capi.nn_module_tensor>;
    get(path: string): Module;
    forward(...inputs: any[]): any;
    call(...inputs: any[]): any;
    /** forward on a worker thread (a JS-defined forward still runs on this thread, called back). */
    forwardAsync(...inputs: ForwardArg[]): Promise<any>;
    // A parameter or buffer registered as null is left out, as in torch.
    namedParameters(recurse?: boolean): [string, Tensor][];
    parameters(): Tensor[];
    namedBuffers(recurse?: boolean): [string, Tensor][];
    buffers(): Tensor[];
    namedChildren(): [string, Module][];
    children(): Module[];
    stateDict(): Map<string, Tensor>;
    loadStateDict(sd: StateDict, opts?: { strict?: boolean }): { missingKeys: string[]; unexpectedKeys: string[] };
    train(mode?: boolean): this;
    eval(): this;
    readonly training: boolean;
    to(...args: (DeviceLike | DType | null | undefined)[]): this;
    requiresGrad_(v?: boolean): this;
    zeroGrad(setToNone?: boolean): void;
    numParameters(opts?: { onlyTrainable?: boolean }): number;
    toString(): string;
    clone(): Module;
    shapeCheck(...shapes: (readonly number[])[]): ReturnType<typeof capi.nn_module_shape_check>;
    dispose(): void;
    [Symbol.dispose](): void;
    [Symbol.asyncDispose](): Promise<void>;
  }
  class Parameter extends Tensor { constructor(data: Tensor, requiresGrad?: boolean) }
  class Sequential extends Builtin {
    constructor(...modules: Module[]);
    append(m: Module): this;
    readonly length: number;
    at(i: number): Module;
    [Symbol.iterator](): Iterator<Module>;
  }
  class ModuleList extends Sequential {}
  class ModuleDict extends Builtin {
    constructor(modules?: { [name: string]: Module });
    set(name: string, m: Module): this;
    /** The child named k, or undefined. */
    get(name: string): any;
    keys(): string[];
    entries(): [string, Module][];
  }
  namespace utils {
    function clipGradNorm_(params: readonly Tensor[] | Module, maxNorm: number, normType?: number,
      errorIfNonfinite?: boolean): number;
    function clipGradValue_(params: readonly Tensor[] | Module, clipValue: number): void;
  }
  namespace init {
    function uniform_(t: Tensor, a: number, b: number): Tensor;
    function normal_(t: Tensor, mean: number, std: number): Tensor;
    function zeros_(t: Tensor): Tensor;
  }
}

/** Language models (lm.js): load, tokenize, chat templates, streamed generation. */
export namespace lm {
  /** A chat message; other members are visible to the template. */
  interface Message { role: string; content: string; [member: string]: unknown }
  /** A string (tokenized with the tokenizer's specials), chat messages (through the template), or ids. */
  type Prompt = string | readonly Message[] | readonly number[];
  interface LoadOptions {
    dtype?: 'float32' | 'bfloat16' | 'float16' | DType; device?: string; weights?: 'packed' | 'dequantize';
    quantize?: 'q8_0' | 'q4_0' | 'q4_1' | 'bf16' | 'none'; activations?: 'float' | 'int8'; init?: 'random';
    seed?: number;
  }
  interface SamplerOptions {
    temperature?: number; topK?: number; topP?: number; minP?: number; repetitionPenalty?: number;
    frequencyPenalty?: number; presencePenalty?: number; seed?: number;
  }
  interface StreamOptions { maxTokens?: number; stop?: string | readonly string[]; stopIds?: readonly number[]; skipSpecial?: boolean }
  /** What describe says: architecture, n_layer, n_vocab, n_ctx_train, bos, eos, has_chat_template, ... */
  interface Info { architecture: string; source: string; n_vocab: number; n_ctx_train: number; [key: string]: unknown }
  class Model {
    constructor(handle: capi.LmModel);
    static load(path: string, opts?: LoadOptions): Model;
    /** Model.load on a worker thread. */
    static loadAsync(path: string, opts?: LoadOptions): Promise<Model>;
    readonly handle: capi.LmModel;
    readonly info: Info;
    tokenize(text: string, opts?: { addSpecial?: boolean; parseSpecial?: boolean }): number[];
    detokenize(ids: readonly number[], opts?: { skipSpecial?: boolean }): string;
    tokenText(id: number): string;
    chat(messages: readonly Message[], opts?: { addGenerationPrompt?: boolean; template?: string }): string;
    promptIds(prompt: Prompt): number[];
    session(opts?: { nCtx?: number; nSeq?: number }): Session;
    detokenizer(opts?: { skipSpecial?: boolean }): Detokenizer;
    generate(prompt: Prompt, opts?: SamplerOptions & StreamOptions & { nCtx?: number }): Generation;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  class Session {
    constructor(model: Model, nCtx?: number, nSeq?: number);
    readonly model: Model;
    decode(tokens: readonly number[], opts?: { seq?: number; allLogits?: boolean }): Tensor;
    decodeBatch(batch: ReadonlyMap<number, readonly number[]> | readonly (readonly [number, readonly number[]])[]): Tensor;
    length(seq?: number): number;
    rewind(pos: number, seq?: number): void;
    fork(dst: number, src?: number, pos?: number): void;
    generate(prompt: Prompt, opts?: StreamOptions & { sampler?: Sampler; seq?: number }): Generation;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  class Sampler {
    constructor(opts?: SamplerOptions);
    apply(logits: Tensor, history?: readonly number[]): Tensor;
    sample(logits: Tensor, history?: readonly number[]): number;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  /** Pieces of text, never a split character or a part of a stop string. */
  class Generation {
    constructor(session: Session, prompt: readonly number[], opts: StreamOptions & { sampler?: Sampler; seq?: number });
    readonly session: Session;
    readonly ids: number[];
    /** 'stop' or 'length' once it ended, '' while it runs. */
    readonly finishReason: string;
    /** The text so far. */
    readonly output: string;
    nextPiece(): string | null;
    /** The next piece, its tokens generated on a worker thread; null at the end. */
    nextPieceAsync(): Promise<string | null>;
    readAll(): Promise<string>;
    readAllSync(): string;
    [Symbol.iterator](): Iterator<string>;
    [Symbol.asyncIterator](): AsyncIterator<string>;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  class Detokenizer {
    constructor(model: Model, skipSpecial?: boolean);
    push(id: number): string;
    flush(): string;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  /** The C API's "key=value,..." text of the entries given (null: none). */
  function optionsText(entries: { [key: string]: number | string | boolean | bigint | null | undefined }): string | null;
}

/** Training past one process (dist.js): torch.distributed's functions over ctorch's process groups. */
export namespace distributed {
  /** The reductions (ctorch_reduce_op's values). */
  const ReduceOp: { readonly SUM: 1; readonly AVG: 2; readonly PRODUCT: 3; readonly MIN: 4; readonly MAX: 5 };
  type ReduceOpValue = 1 | 2 | 3 | 4 | 5;
  /** Which group a call uses (default: the one initProcessGroup made). */
  interface GroupOption { group?: ProcessGroup }
  class Work {
    constructor(handle: capi.Work);
    wait(timeout?: number): true;
    waitAsync(timeout?: number): Promise<true>;
    isCompleted(): boolean;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  class TCPStore {
    constructor(hostName: string, port: number, opts?: { worldSize?: number; isMaster?: boolean; timeout?: number });
    readonly port: number;
    dispose(): void;
    [Symbol.dispose](): void;
  }
  class ProcessGroup {
    constructor(handle: capi.ProcessGroup, localRank?: number);
    rank(): number;
    size(): number;
    backend(): string;
  }
  interface InitOptions {
    backend?: 'gloo' | 'nccl'; initMethod?: 'env://'; timeout?: number;
    store?: TCPStore; rank?: number; worldSize?: number;
  }
  function initProcessGroup(opts?: InitOptions | 'gloo' | 'nccl'): ProcessGroup;
  function destroyProcessGroup(opts?: GroupOption): void;
  function isInitialized(): boolean;
  function getRank(opts?: GroupOption): number;
  function getWorldSize(opts?: GroupOption): number;
  function getBackend(opts?: GroupOption): string;
  function getLocalRank(): number;
  function allReduce(tensor: Tensor, op?: ReduceOpValue, opts?: GroupOption): void;
  function allReduceAsync(tensor: Tensor, op?: ReduceOpValue, opts?: GroupOption): Promise<true>;
  function broadcast(tensor: Tensor, src: number, opts?: GroupOption): void;
  function broadcastAsync(tensor: Tensor, src: number, opts?: GroupOption): Promise<true>;
  function allGather(tensorList: readonly Tensor[], tensor: Tensor, opts?: GroupOption): void;
  function allGatherAsync(tensorList: readonly Tensor[], tensor: Tensor, opts?: GroupOption): Promise<true>;
  function gather(tensor: Tensor, gatherList?: readonly Tensor[] | null, dst?: number, opts?: GroupOption): void;
  function scatter(tensor: Tensor, scatterList?: readonly Tensor[] | null, src?: number, opts?: GroupOption): void;
  function reduce(tensor: Tensor, dst: number, op?: ReduceOpValue, opts?: GroupOption): void;
  function reduceScatter(output: Tensor, inputList: readonly Tensor[], op?: ReduceOpValue, opts?: GroupOption): void;
  function send(tensor: Tensor, dst: number, opts?: GroupOption & { tag?: number }): void;
  function recv(tensor: Tensor, src: number, opts?: GroupOption & { tag?: number }): number;
  function barrier(opts?: GroupOption): void;
  function barrierAsync(opts?: GroupOption): Promise<true>;
  function averageGradients(parameters: readonly Tensor[] | { parameters(): Tensor[] },
    opts?: GroupOption & { bucketCapMb?: number }): void;
  function broadcastParameters(parameters: readonly Tensor[] | { parameters(): Tensor[] }, src?: number,
    opts?: GroupOption): void;
  /** DistributedDataParallel's options: torch's arguments in camelCase (bucketCapMb default: DDP's 25, first bucket 1 MiB). */
  interface DistributedDataParallelOptions extends GroupOption {
    bucketCapMb?: number; findUnusedParameters?: boolean; gradientAsBucketView?: boolean; broadcastBuffers?: boolean;
  }
  /** torch.nn.parallel.DistributedDataParallel: c10d's Reducer averages the gradients during backward. Collective to construct. */
  class DistributedDataParallel {
    constructor(module: nn.Module, opts?: DistributedDataParallelOptions);
    /** Over tensors of your own (a TorchScript module's): preForward(), your forward, postForward(output). */
    static fromParameters(parameters: readonly Tensor[] | { parameters(): Tensor[] },
      opts?: DistributedDataParallelOptions & { buffers?: readonly Tensor[] }): DistributedDataParallel;
    /** The wrapped module (null for a wrapper from fromParameters). */
    readonly module: nn.Module | null;
    readonly processGroup: ProcessGroup;
    forward(...inputs: any[]): any;
    call(...inputs: any[]): any;
    preForward(): void;
    postForward(output: unknown): void;
    /** fn with gradient synchronisation off (local accumulation); a Promise from fn: off until it settles. */
    noSync<T>(fn: () => T): T;
    parameters(): Tensor[];
    bucketCount(): number;
    bucketIndices(bucket: number): number[];
    close(): void;
    dispose(): void;
    [Symbol.dispose](): void;
  }
}
