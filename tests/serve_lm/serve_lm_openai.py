"""ctorch-lm-serve through PyPI's official `openai` client: models, chat and
completions with and without streaming, seeded sampling, four concurrent
streams decoded in one batch (each the same text as alone), a fifth request
refused with 503 while they run, and the client's own errors for refused
requests.

usage: serve_lm_openai.py SERVER_BINARY"""
import os
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lm_util import SKIP, Server, tiny_model  # noqa: E402

try:
    import openai
except ImportError:
    print(f"skipped: PyPI's openai is not installed for {sys.executable} (scripts/torch-env installs it)")
    sys.exit(SKIP)

PROMPTS = ["hello world", "the quick brown fox", "tell me a story", "1 2 3 4"]


def chat(client, text, **kw):
    return client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": text}], **kw)


def streamed(client, text, started=None, **kw):
    """The text, finish reason and usage of a streamed chat; `started` is set at the first content."""
    out, reason, usage = "", None, None
    for chunk in chat(client, text, stream=True, stream_options={"include_usage": True}, **kw):
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            out += delta.content
            if started is not None:
                started.set()
        if chunk.choices[0].finish_reason is not None:
            assert reason is None, "two finish reasons"
            reason = chunk.choices[0].finish_reason
    return out, reason, usage


def main():
    binary = sys.argv[1]
    tmp = tempfile.TemporaryDirectory(prefix="serve_lm_model_")
    model = tiny_model(os.path.join(tmp.name, "tiny"))
    with Server(binary, model, "--ctx", "2304", "--slots", "4", "--queue", "0", "--max-prompt-tokens", "200") as s:
        client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0, timeout=60)

        assert [m.id for m in client.models.list().data] == ["tiny"]

        # Greedy: the streamed text is the non-streamed text, usage the same.
        r = chat(client, "hello world", max_tokens=20, temperature=0)
        text = r.choices[0].message.content
        assert r.choices[0].message.role == "assistant" and r.choices[0].finish_reason in ("stop", "length"), r
        assert 0 < r.usage.completion_tokens <= 20 and r.usage.prompt_tokens > 2, r.usage
        st, reason, usage = streamed(client, "hello world", max_tokens=20, temperature=0)
        assert (st, reason) == (text, r.choices[0].finish_reason), (st, reason, r)
        counts = lambda u: (u.prompt_tokens, u.completion_tokens, u.total_tokens)  # noqa: E731
        assert counts(usage) == counts(r.usage), (usage, r.usage)
        # max_completion_tokens, the newer name, bounds the same way.
        r2 = chat(client, "hello world", max_completion_tokens=3, temperature=0, extra_body={"ignore_eos": True})
        assert r2.usage.completion_tokens == 3 and r2.choices[0].finish_reason == "length", r2

        # Completions, plain and streamed.
        c = client.completions.create(model="tiny", prompt="the world", max_tokens=8, temperature=0)
        assert c.object == "text_completion" and c.choices[0].finish_reason in ("stop", "length"), c
        pieces = [ch.choices[0].text for ch in client.completions.create(model="tiny", prompt="the world",
                                                                          max_tokens=8, temperature=0, stream=True)
                  if ch.choices]
        assert "".join(pieces) == c.choices[0].text, (pieces, c)

        # Sampling with a seed repeats; top_k/min_p go through as extensions.
        kw = dict(max_tokens=16, temperature=1.0, top_p=0.95, seed=1234, extra_body={"top_k": 40, "min_p": 0.01,
                                                                                     "ignore_eos": True})
        a, b = chat(client, "tell me", **kw), chat(client, "tell me", **kw)
        assert a.choices[0].message.content == b.choices[0].message.content, (a, b)

        # Alone, each prompt's greedy text (not streamed: the same text, as
        # checked above, and quicker); then four streams at once, each in its
        # own sequence of the shared session, decoded together where they
        # overlap (a loaded machine may run a short one alone: the overlap
        # is proven below, by the long streams).
        kw = dict(max_tokens=160, temperature=0, extra_body={"ignore_eos": True})
        alone = [chat(client, p, **kw).choices[0].message.content for p in PROMPTS]
        results, errors = [None] * 4, []
        started = [threading.Event() for _ in PROMPTS]

        def run(i):
            try:
                results[i] = streamed(client, PROMPTS[i], started=started[i], **kw)
            except Exception as e:  # reported below, with the others
                errors.append(f"stream {i}: {e!r}")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for e in started:
            assert e.wait(30), "a stream did not start"
        for t in threads:
            t.join(60)
        assert not errors, errors
        for i, (got, reason, usage) in enumerate(results):
            assert got == alone[i], (i, got, alone[i])
            assert reason == "length" and usage.completion_tokens == 160, (i, reason, usage)
        s.wait_idle()

        # Four slots, no queue: a fifth request is refused while four run.
        # Four long streams (2,000 tokens each, their text not compared) hold
        # the slots, and the fifth request is tried until it is refused or
        # they all end: however fast decoding is, the check does not hang on
        # when the fifth request happens to arrive.
        long_kw = dict(max_tokens=2000, temperature=0, extra_body={"ignore_eos": True})
        started = [threading.Event() for _ in PROMPTS]
        ended = []

        def hold(i):
            try:
                streamed(client, PROMPTS[i], started=started[i], **long_kw)
            except Exception as e:  # reported below
                errors.append(f"long stream {i}: {e!r}")
            finally:
                ended.append(i)

        threads = [threading.Thread(target=hold, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for e in started:
            assert e.wait(30), "a long stream did not start"
        busy = False
        while not busy and len(ended) < 4:
            try:
                chat(client, "one more", max_tokens=2)
            except openai.APIStatusError as e:
                busy = e.status_code == 503 and e.body["code"] is None and "busy" in e.body["message"]
                assert busy, e
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert busy, "a fifth request was not refused with 503 while four streams ran"
        # Four streams held their slots at once, so some decode steps ran
        # several sequences in one batch.
        h = s.wait_idle()
        assert h["max_batch"] >= 2, h

        # Refusals come back as the client's own exceptions.
        for bad, want in ((dict(n=2), "n"), (dict(extra_body={"frobnicate": 1}), "frobnicate"),
                          (dict(presence_penalty=5), "presence_penalty")):
            try:
                chat(client, "x", max_tokens=2, **bad)
                raise AssertionError(f"{bad} was accepted")
            except openai.BadRequestError as e:
                assert e.body["param"] == want, e.body
        try:
            chat(client, "word " * 400, max_tokens=2)
            raise AssertionError("an oversize prompt was accepted")
        except openai.BadRequestError as e:
            assert e.body["code"] == "context_length_exceeded", e.body
        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
            raise AssertionError("an unknown model was accepted")
        except openai.NotFoundError as e:
            assert e.body["code"] == "model_not_found", e.body
        client.close()
    print(f"serve_lm_openai: 4 concurrent streams equal to alone (max batch {h['max_batch']}), 503 when full, "
          f"{h['served']} requests served")
    return 0


if __name__ == "__main__":
    sys.exit(main())
