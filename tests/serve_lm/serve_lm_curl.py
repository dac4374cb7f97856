"""ctorch-lm-serve through curl and raw sockets: the endpoints, server-sent
events as written on the wire, every kind of bad request answered with a
JSON error in the OpenAI API's shape, a client that disconnects mid-stream
(its slot freed, the server still serving), the default bind to loopback,
and a clean stop on SIGTERM.

usage: serve_lm_curl.py SERVER_BINARY"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lm_util import SKIP, Server, check_error, child_env, tiny_model  # noqa: E402

CHAT = "/v1/chat/completions"


def curl(server, path, body=None, raw=None, stream=False):
    """(status, body text) through curl."""
    cmd = ["curl", "-sS", "--max-time", "30", "-w", "\n%{http_code}", server.base + path]
    if stream:
        cmd.insert(1, "-N")
    if raw is not None or body is not None:
        data = raw if raw is not None else json.dumps(body).encode()
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    else:
        data = None
    out = subprocess.run(cmd, input=data, capture_output=True, check=True, env=child_env()).stdout.decode()
    text, _, status = out.rpartition("\n")
    return int(status), text


def curl_json(server, path, body=None, raw=None):
    status, text = curl(server, path, body, raw)
    return status, json.loads(text)


def sse_events(text):
    """The data of each event of a text/event-stream body, checking the framing."""
    assert text.endswith("\n\n"), text[-200:]
    events = []
    for block in text[:-2].split("\n\n"):
        lines = [l for l in block.split("\n") if not l.startswith(":")]
        assert len(lines) == 1 and lines[0].startswith("data: "), block
        events.append(lines[0][len("data: "):])
    return events


def stream_text(events, chat=True):
    """The text of a stream's chunks, its finish reason, the usage chunk if any."""
    assert events[-1] == "[DONE]", events[-3:]
    chunks = [json.loads(e) for e in events[:-1]]
    text, reasons, usage = "", [], None
    for c in chunks:
        assert c["object"] == ("chat.completion.chunk" if chat else "text_completion"), c
        if not c["choices"]:
            usage = c["usage"]
            continue
        (ch,) = c["choices"]
        text += ch["delta"].get("content", "") if chat else ch["text"]
        reasons.append(ch["finish_reason"])
    assert all(r is None for r in reasons[:-1]) and reasons[-1] in ("stop", "length"), reasons
    return text, reasons[-1], usage


def main():
    binary = sys.argv[1]
    if subprocess.run(["sh", "-c", "command -v curl"], capture_output=True).returncode != 0:
        print("skipped: curl is not installed")
        return SKIP
    tmp = tempfile.TemporaryDirectory(prefix="serve_lm_model_")
    model = tiny_model(os.path.join(tmp.name, "tiny"))

    # A model that does not load: exit 1 and a message naming it.
    p = subprocess.run([binary, os.path.join(tmp.name, "missing"), "--port", "0"], capture_output=True, text=True,
                       timeout=30, env=child_env())
    assert p.returncode == 1 and "missing" in p.stderr, (p.returncode, p.stderr)

    with Server(binary, model, "--ctx", "256", "--slots", "2", "--max-body", "65536",
                "--max-prompt-tokens", "100") as s:
        # Loopback only unless --host says otherwise.
        assert s.host == "127.0.0.1", s.url
        status, models = curl_json(s, "/v1/models")
        assert status == 200 and models["object"] == "list", models
        assert [m["id"] for m in models["data"]] == ["tiny"] and models["data"][0]["object"] == "model", models
        status, h = curl_json(s, "/health")
        assert status == 200 and h["status"] == "ok" and h["slots"] == 2 and h["busy"] == 0, h

        # Non-streaming chat, then the same request streamed: greedy, so the
        # stream's deltas join to the same text, with the same usage.
        req = {"model": "tiny", "messages": [{"role": "user", "content": "hello world"}], "max_tokens": 24,
               "temperature": 0}
        status, r = curl_json(s, CHAT, req)
        assert status == 200, r
        assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-") and r["model"] == "tiny", r
        (choice,) = r["choices"]
        assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str), r
        u = r["usage"]
        assert 0 < u["completion_tokens"] <= 24 and u["prompt_tokens"] > 2, u
        assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], u
        assert choice["finish_reason"] == ("length" if u["completion_tokens"] == 24 else "stop"), r
        status, text = curl(s, CHAT, dict(req, stream=True, stream_options={"include_usage": True}), stream=True)
        assert status == 200, text
        events = sse_events(text)
        first = json.loads(events[0])["choices"][0]["delta"]
        assert first == {"role": "assistant", "content": ""}, first
        streamed, reason, usage = stream_text(events)
        assert streamed == choice["message"]["content"], (streamed, choice)
        assert reason == choice["finish_reason"] and usage == u, (reason, usage, u)

        # /v1/completions with token ids: prompt_tokens is their count.
        status, r = curl_json(s, "/v1/completions", {"model": "tiny", "prompt": [1, 2, 3, 4, 5], "max_tokens": 3,
                                                     "temperature": 0, "ignore_eos": True})
        assert status == 200 and r["object"] == "text_completion", r
        assert r["usage"]["prompt_tokens"] == 5 and r["usage"]["completion_tokens"] == 3, r
        assert r["choices"][0]["finish_reason"] == "length", r
        status, text = curl(s, "/v1/completions", {"model": "tiny", "prompt": "the world", "max_tokens": 5,
                                                   "stream": True}, stream=True)
        assert status == 200, text
        stream_text(sse_events(text), chat=False)

        # Bad requests: each a JSON error naming what is wrong.
        check_error(*curl_json(s, CHAT, raw=b'{"model": "tiny", "messages": ['), 400)
        check_error(*curl_json(s, CHAT, raw=b"[" * 5000 + b"]" * 5000), 400)
        check_error(*curl_json(s, CHAT, raw=b'"a string"'), 400)
        check_error(*curl_json(s, CHAT, raw=b'{"model": "tiny", "messages": [], "x": "\xff"}'), 400)
        check_error(*curl_json(s, CHAT, dict(req, n=2)), 400, param="n")
        check_error(*curl_json(s, CHAT, dict(req, frobnicate=1)), 400, param="frobnicate")
        check_error(*curl_json(s, CHAT, dict(req, temperature=7)), 400, param="temperature")
        check_error(*curl_json(s, CHAT, dict(req, max_tokens=0)), 400, param="max_tokens")
        check_error(*curl_json(s, CHAT, dict(req, stop=["a", "b", "c", "d", "e"])), 400, param="stop")
        check_error(*curl_json(s, CHAT, dict(req, messages=[{"role": "wizard", "content": "x"}])), 400)
        check_error(*curl_json(s, CHAT, dict(req, logprobs=True)), 400, code="unsupported_parameter")
        check_error(*curl_json(s, CHAT, dict(req, model="gpt-4o")), 404, code="model_not_found")
        check_error(*curl_json(s, "/v1/completions", {"model": "tiny", "prompt": ["a", "b"]}), 400, param="prompt")
        check_error(*curl_json(s, "/v1/embeddings", {"model": "tiny"}), 404)
        # A prompt over the limit (100 tokens here), and a body over 64 KiB.
        long_msg = [{"role": "user", "content": "word " * 300}]
        check_error(*curl_json(s, CHAT, dict(req, messages=long_msg)), 400, code="context_length_exceeded")
        big = dict(req, messages=[{"role": "user", "content": "x" * 100000}])
        check_error(*curl_json(s, CHAT, big), 413)

        # A client that leaves mid-stream: its slot is freed, the server goes on.
        before = s.health()
        body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 250,
                           "ignore_eos": True, "stream": True}).encode()
        sock = socket.create_connection((s.host, s.port), timeout=10)
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        got = b""
        while got.count(b"data: ") < 3:
            chunk = sock.recv(4096)
            assert chunk, got
            got += chunk
        assert got.startswith(b"HTTP/1.1 200") and b"text/event-stream" in got, got[:300]
        sock.close()
        after = s.wait_idle()
        assert after["cancelled"] == before["cancelled"] + 1, (before, after)
        assert after["completion_tokens"] == before["completion_tokens"], (before, after)
        status, r = curl_json(s, CHAT, req)
        assert status == 200 and r["choices"][0]["message"]["content"] == choice["message"]["content"], r
    print("serve_lm_curl: endpoints, streams, 16 refusals, a disconnect: all as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
