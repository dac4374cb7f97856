"""What the ctorch-lm-serve tests share: a tiny model folder, the server
started on a free port of 127.0.0.1 and stopped, its /health read, and a
raw HTTP request (the Python standard library only: the curl and openai
tests both import this)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77


def child_env():
    """The environment of the processes a test starts. Under scripts/sanitize
    this Python runs with the ASan runtime preloaded and leak checking off
    (its build folder's python-asan): the server is instrumented itself and
    gets leak checking back, and curl must not inherit the preload (it
    deadlocks in setlocale at start with the runtime preloaded)."""
    env = dict(os.environ)
    preload = env.get("CTORCH_ASAN_PRELOAD")
    if preload:
        rest = [p for p in env.get("LD_PRELOAD", "").split(":") if p and p != preload]
        if rest:
            env["LD_PRELOAD"] = ":".join(rest)
        else:
            env.pop("LD_PRELOAD", None)
        opts = env.get("ASAN_OPTIONS", "")
        if opts.endswith(":detect_leaks=0"):
            env["ASAN_OPTIONS"] = opts[: -len(":detect_leaks=0")]
    return env


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: each byte a printable character."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def tiny_model(folder):
    """A 2-layer Llama with a byte-level BPE tokenizer (a few merges), a
    ChatML template and random weights (loaded with init=random): what the
    server's HTTP side needs, decoding in about a millisecond a token."""
    alphabet = bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    merges = [("h", "e"), ("l", "l"), ("\u0120", "w"), ("o", "r"), ("\u0120", "t")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    added = []
    for s in specials:
        added.append({"id": len(vocab), "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
        vocab[s] = len(vocab)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    eos = vocab["<|im_end|>"]
    template = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
                "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
                "{% endif %}")
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
              "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": len(vocab), "max_position_embeddings": 512,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu",
              "bos_token_id": vocab["<|endoftext|>"], "eos_token_id": eos, "torch_dtype": "float32"}
    files = {
        "config.json": config,
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": {"bos_token": None, "eos_token": "<|im_end|>", "chat_template": template,
                                  "model_max_length": 512, "tokenizer_class": "GPT2Tokenizer"},
        "generation_config.json": {"eos_token_id": eos, "bos_token_id": vocab["<|endoftext|>"]},
    }
    os.makedirs(folder, exist_ok=True)
    for name, obj in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            json.dump(obj, f)
    return folder


class Server:
    """ctorch-lm-serve on a free port; a context manager that stops it with
    SIGTERM and checks that it exited 0."""

    def __init__(self, binary, model, *args):
        self.tmp = tempfile.TemporaryDirectory(prefix="serve_lm_")
        self.log_path = os.path.join(self.tmp.name, "server.log")
        self.log = open(self.log_path, "w")
        cmd = [binary, model, "--port", "0", "--load-options", "init=random,seed=1", "--model-name", "tiny",
               "--threads", "1", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True, env=child_env())
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.proc.wait(timeout=30)
            raise SystemExit(f"the server did not start ({' '.join(cmd)}): exit {self.proc.returncode}\n"
                             f"{line}{open(self.log_path).read()}")
        self.url = line.split("http://", 1)[1].split()[0]
        self.host, port = self.url.rsplit(":", 1)
        self.port = int(port)
        self.base = f"http://{self.url}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise SystemExit("the server did not stop within 20 s of SIGTERM")
        self.log.close()
        if exc[0] is None and rc != 0:
            raise SystemExit(f"the server exited {rc} on SIGTERM:\n{open(self.log_path).read()}")
        if exc[0] is not None:
            sys.stderr.write("server log:\n" + open(self.log_path).read()[-4000:])
        self.tmp.cleanup()

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text) of one request."""
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def health(self):
        status, h = self.request("GET", "/health")
        assert status == 200, (status, h)
        return h

    def wait_idle(self, timeout=10):
        """/health once no request runs or waits."""
        deadline = time.time() + timeout
        while True:
            h = self.health()
            if h["busy"] == 0 and h["queued"] == 0:
                return h
            if time.time() > deadline:
                raise AssertionError(f"requests still running after {timeout} s: {h}")
            time.sleep(0.05)


def check_error(status, body, want_status, param=None, code=None):
    """An error in the OpenAI API's shape, with the status, param and code wanted."""
    assert status == want_status, (status, body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    e = body["error"]
    assert set(e) == {"message", "type", "param", "code"}, e
    assert isinstance(e["message"], str) and e["message"], e
    if param is not None:
        assert e["param"] == param, e
    if code is not None:
        assert e["code"] == code, e
    return e
