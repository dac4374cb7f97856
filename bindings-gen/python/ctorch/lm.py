"""Language models: load a causal LM (a Hugging Face folder or a GGUF file),
tokenize, apply its chat template and stream generated text, over the C
API's ctorch_lm_* functions (include/ctorch.h, "Language models";
docs/llm.md).

    from ctorch import lm
    model = lm.Model.load("SmolLM2-135M-Instruct.Q4_1.gguf")
    for piece in model.generate([{"role": "user", "content": "Hi!"}], max_tokens=32):
        print(piece, end="", flush=True)

A Model may be shared by threads (tokenize, chat and generate at once); a
Session, Sampler, Generation or Detokenizer is used by one thread at a time.
Sessions, generations and detokenizers keep their model alive.
"""
import json as _json
import math as _math

from . import _api

__all__ = ["Model", "Session", "Sampler", "Generation", "Detokenizer", "options_text"]


def options_text(**options):
    """The C API's "key=value,..." options text of the keywords that are not
    None: booleans as 0/1, numbers as Python writes them. A key or value that
    would change the text's structure (',' or '=') is refused."""
    parts = []
    for k, v in options.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = int(v)
        elif isinstance(v, float) and not _math.isfinite(v):
            raise ValueError(f"ctorch.lm: option {k}={v!r} is not a finite number")
        elif not isinstance(v, (int, float, str)):
            raise TypeError(f"ctorch.lm: option {k} takes a number or a string, not {type(v).__name__}")
        s = str(v)
        if "," in s or "=" in s:
            raise ValueError(f"ctorch.lm: option {k}={s!r} may not contain ',' or '='")
        parts.append(f"{k}={s}")
    return ",".join(parts) or None


def _ids(ids):
    """A list of ints from ids (a list, a tuple, a Tensor of ids)."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return [int(i) for i in ids]


class Model:
    """A loaded language model: weights, configuration, tokenizer, chat template."""

    def __init__(self, handle):
        self._m = handle
        self._info = None

    @classmethod
    def load(cls, path, dtype=None, device=None, *, weights=None, quantize=None, activations=None, init=None,
             seed=None):
        """Loads a folder as save_pretrained writes it or a GGUF file.
        dtype: "float32" (default), "bfloat16" or "float16"; device: "cpu"
        (default), "cuda" or "cuda:N"; weights: "packed" (a GGUF file's
        quantised matrices multiplied as they are on the CPU, the default)
        or "dequantize"; quantize: "q8_0", "q4_0" or "q4_1" packs float
        matrices as they load (CPU); activations: "float" (default) or
        "int8" (the packed matrices multiply activations rounded to 8 bits,
        as llama.cpp does, where the CPU has AVX-512 VNNI); init="random"
        with seed=N draws the weights from the configuration instead of
        reading them."""
        return cls(_api.lm_load(path, options_text(dtype=_name(dtype), device=_name(device), weights=weights,
                                                   quantize=quantize, activations=activations, init=init,
                                                   seed=seed)))

    def close(self):
        """Frees the model now (its sessions and generations keep it alive)."""
        if self._m is not None:
            self._m.dispose()
            self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def handle(self):
        """The generated ctorch.capi.LmModel (for the ctorch.capi.lm_* functions)."""
        if self._m is None:
            raise ValueError("ctorch.lm.Model: used after close()")
        return self._m

    @property
    def info(self):
        """What ctorch_lm_describe says, as a dict: architecture, n_layer,
        n_vocab, n_ctx_train, dtype, device, bos, eos, has_chat_template, ..."""
        if self._info is None:
            self._info = _json.loads(_api.lm_describe(self.handle))
        return self._info

    def tokenize(self, text, add_special=True, parse_special=True):
        """The ids of text (a list of ints), as transformers' tokenizer(text)
        (add_special: BOS/EOS as the tokenizer adds them; parse_special:
        special tokens written in the text are single ids)."""
        return _api.lm_tokenize(self.handle, text, int(add_special), int(parse_special)).tolist()

    def detokenize(self, ids, skip_special=False):
        """The text of ids, as transformers' decode(ids, skip_special_tokens=...)."""
        return _api.lm_detokenize(self.handle, _ids(ids), int(skip_special))

    def token_text(self, id):
        """One vocabulary entry as the tokenizer file writes it."""
        return _api.lm_token_text(self.handle, int(id))

    def chat(self, messages, add_generation_prompt=True, template=None):
        """messages (dicts with "role" and "content") through the model's chat
        template, as transformers' apply_chat_template(messages, tokenize=False,
        add_generation_prompt=...). template: a template's text or a built-in
        name ("chatml", "llama2", "llama3", "mistral", "zephyr") instead."""
        return _api.lm_chat_apply(self.handle, _json.dumps(list(messages), ensure_ascii=False),
                                  int(add_generation_prompt), template)

    def prompt_ids(self, prompt):
        """The ids a generation starts from: a str is tokenized with the
        tokenizer's specials; a list of message dicts goes through the chat
        template with the generation prompt (tokenized without adding
        specials, as apply_chat_template(tokenize=True)); ids are taken as they are."""
        if isinstance(prompt, str):
            return self.tokenize(prompt)
        if hasattr(prompt, "tolist"):  # a Tensor (or array) of ids
            return _ids(prompt)
        prompt = list(prompt)
        if prompt and isinstance(prompt[0], dict):
            return self.tokenize(self.chat(prompt), add_special=False)
        return _ids(prompt)

    def session(self, n_ctx=0, n_seq=1):
        """A new Session: a KV cache of n_seq sequences of n_ctx positions
        (0: the model's training context)."""
        return Session(self, n_ctx, n_seq)

    def detokenizer(self, skip_special=True):
        """A new streaming Detokenizer."""
        return Detokenizer(self, skip_special)

    def generate(self, prompt, max_tokens=None, temperature=0.0, top_p=1.0, top_k=0, seed=0, stop=(), *,
                 min_p=0.0, repetition_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0, stop_ids=(),
                 skip_special=True, n_ctx=None):
        """Generates text from prompt (a str, a list of chat messages, or ids)
        in a session of its own: an iterator of text pieces (a Generation).
        temperature 0 is greedy; top_p, top_k, min_p, the penalties and seed
        are the sampler's (Sampler); stop: strings the text ends before (a str
        is one); stop_ids: ids that end it. The session holds len(prompt) +
        max_tokens positions, or n_ctx, or the model's training context when
        max_tokens is None."""
        ids = self.prompt_ids(prompt)
        if n_ctx is None:
            n_ctx = len(ids) + max_tokens if max_tokens is not None else 0
        sampler = Sampler(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                          repetition_penalty=repetition_penalty, frequency_penalty=frequency_penalty,
                          presence_penalty=presence_penalty, seed=seed)
        return Session(self, n_ctx, 1).generate(ids, sampler, max_tokens=max_tokens, stop=stop, stop_ids=stop_ids,
                                               skip_special=skip_special)


def _name(x):
    """A dtype or device given as a ctorch object or a str, as its name."""
    if x is None or isinstance(x, str):
        return x
    name = getattr(x, "_name", None) or str(x)
    return name[len("ctorch."):] if name.startswith("ctorch.") else name


class Session:
    """A KV cache of n_seq sequences (0..n_seq-1) of up to n_ctx positions each."""

    def __init__(self, model, n_ctx=0, n_seq=1):
        self.model = model
        self._s = _api.lm_session_new(model.handle, int(n_ctx), int(n_seq))

    def close(self):
        self._s.dispose()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def decode(self, tokens, seq=0, all_logits=False):
        """Appends tokens to sequence seq; the float32 logits ([1, V], or
        [len(tokens), V] with all_logits) as a ctorch Tensor."""
        return _api.lm_decode(self._s, int(seq), _ids(tokens), int(all_logits))

    def decode_batch(self, batch):
        """batch: {seq: tokens} (or (seq, tokens) pairs), decoded in one
        forward; the last new position's logits of each, [len(batch), V], in
        the batch's order."""
        pairs = list(batch.items()) if isinstance(batch, dict) else list(batch)
        seqs = [int(s) for s, _ in pairs]
        toks = [_ids(t) for _, t in pairs]
        return _api.lm_decode_batch(self._s, seqs, [len(t) for t in toks], [i for t in toks for i in t])

    def length(self, seq=0):
        return _api.lm_session_length(self._s, int(seq))

    def rewind(self, pos, seq=0):
        """Forgets sequence seq from position pos on."""
        _api.lm_session_rewind(self._s, int(seq), int(pos))

    def fork(self, dst, src=0, pos=None):
        """Sequence dst becomes a copy of sequence src's first pos positions (all of them by default)."""
        _api.lm_session_fork(self._s, int(dst), int(src), self.length(src) if pos is None else int(pos))

    def generate(self, prompt, sampler=None, max_tokens=None, stop=(), *, stop_ids=(), seq=0, skip_special=True):
        """Continues sequence seq with prompt (a str, messages or ids; ""
        or [] continues from what it holds) and streams the new text (a
        Generation). sampler: a Sampler (greedy when None). The session is
        busy until the generation ends or is closed."""
        ids = [] if isinstance(prompt, str) and not prompt else self.model.prompt_ids(prompt)
        return Generation(self, ids, sampler or Sampler(), max_tokens, stop, stop_ids, seq, skip_special)


class Sampler:
    """A sampler chain in transformers' order: repetition_penalty (1 = off),
    frequency_penalty and presence_penalty (the OpenAI API's; 0 = off),
    temperature (0 = greedy), top_k (0 = off), top_p (1 = off), min_p (0 =
    off), and the draw from a generator seeded with seed."""

    def __init__(self, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
                 frequency_penalty=0.0, presence_penalty=0.0, seed=0):
        self._s = _api.lm_sampler_new(options_text(
            repetition_penalty=float(repetition_penalty), frequency_penalty=float(frequency_penalty),
            presence_penalty=float(presence_penalty), temperature=float(temperature), top_k=int(top_k),
            top_p=float(top_p), min_p=float(min_p), seed=int(seed)))

    def apply(self, logits, history=()):
        """The processed scores of logits (a ctorch Tensor [V] or [1, V]) given the ids so far."""
        return _api.lm_sampler_apply(self._s, logits, _ids(history))

    def sample(self, logits, history=()):
        """One id drawn from logits given the ids so far."""
        return _api.lm_sampler_sample(self._s, logits, _ids(history))


class Generation:
    """A generation in progress: iterate it for the text, piece by piece
    (never a split character, never a part of a stop string). After it:
    finish_reason ("stop" or "length"), ids (the new ids), text (all of it)."""

    def __init__(self, session, prompt, sampler, max_tokens, stop, stop_ids, seq, skip_special):
        self.session, self.ids, self._pieces = session, [], []
        self.finish_reason = ""
        self._st = _api.lm_stream_new(session._s, int(seq), sampler._s, prompt,
                                      options_text(max_tokens=max_tokens, skip_special=bool(skip_special)))
        for s in [stop] if isinstance(stop, str) else stop:
            _api.lm_stream_stop_string(self._st, s)
        for i in stop_ids:
            _api.lm_stream_stop_token(self._st, int(i))

    def __iter__(self):
        return self

    def __next__(self):
        while self._st is not None:
            text, id_, done = _api.lm_stream_next(self._st)
            if id_ >= 0:
                self.ids.append(id_)
            if done:
                self.finish_reason = _api.lm_stream_finish_reason(self._st)
                self.close()  # gives the session back
            if text:
                self._pieces.append(text)
                return text
        raise StopIteration

    @property
    def text(self):
        """The text generated so far."""
        return "".join(self._pieces)

    def read(self):
        """Runs the generation to its end; all of its text."""
        for _ in self:
            pass
        return self.text

    def close(self):
        """Ends the generation now (what the session holds stays)."""
        if self._st is not None:
            self._st.dispose()
            self._st = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Detokenizer:
    """Ids in, text out, never splitting a UTF-8 character."""

    def __init__(self, model, skip_special=True):
        self._d = _api.lm_detokenizer_new(model.handle, int(skip_special))

    def push(self, id):
        """The text now complete after id (possibly "")."""
        return _api.lm_detokenizer_push(self._d, int(id))

    def flush(self):
        """What was held back (an incomplete character as U+FFFD)."""
        return _api.lm_detokenizer_flush(self._d)
