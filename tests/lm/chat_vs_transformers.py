#!/usr/bin/env python3
"""ctorch's chat templates against transformers' apply_chat_template.

Renders, with the interpreter (lm_chat_render, argv[1]) and with transformers'
render path (render_jinja_template, or on older releases the compiled
template apply_chat_template renders; tokenize=False):
  - the real models' templates in templates/ (SOURCES.md names each) on
    conversations with and without a system message, multi-turn, tool calls,
    Unicode and whitespace, with and without add_generation_prompt;
  - the built-in templates (chatml, llama2, llama3, mistral, zephyr) against
    the models' own templates on the same conversations;
  - probes of each construct the interpreter implements (whitespace control,
    scoping, filters, tests, operators, methods, Python's str/repr).
Texts must be equal byte for byte; where transformers raises, ctorch must
refuse. Then the bounds: an endless-looking loop, a huge string, deep
recursion and deep nesting are refused naming the bound.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from optional_deps import need  # noqa: E402

need("jinja2", "transformers renders chat templates with it")
cu = need("transformers.utils.chat_template_utils", "the reference renderer")
if not hasattr(cu, "render_jinja_template") and not hasattr(cu, "_compile_jinja_template"):
    print(f"skipped: transformers {cu.__name__} of {sys.executable} has neither render_jinja_template nor "
          "_compile_jinja_template (transformers 4.45 or later has them)")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def reference(template, messages, agp, bos, eos):
    """transformers' text, or ('error', message)."""
    try:
        if hasattr(cu, "render_jinja_template"):
            out, _ = cu.render_jinja_template(conversations=[messages], chat_template=template,
                                              add_generation_prompt=agp, bos_token=bos, eos_token=eos)
            return out[0]
        compiled = cu._compile_jinja_template(template)
        return compiled.render(messages=messages, tools=None, documents=None, add_generation_prompt=agp,
                               bos_token=bos, eos_token=eos)
    except Exception as e:  # the template raised or was refused
        return ("error", f"{type(e).__name__}: {e}")


def ctorch_render(cases):
    inp = json.dumps({"cases": cases})
    p = subprocess.run([sys.argv[1]], input=inp.encode(), capture_output=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"lm_chat_render failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return json.loads(p.stdout.decode())


SYS = {"role": "system", "content": "You are a terse assistant."}
U1 = {"role": "user", "content": "Hello!"}
A1 = {"role": "assistant", "content": "  Hi, how can I help?  "}
U2 = {"role": "user", "content": "Write \"quotes\", 'single', a back\\slash,\na newline\tand a tab."}
U3 = {"role": "user", "content": "Grüße aus Köln 👋 — 日本語も\u00a0ok"}
A2 = {"role": "assistant", "content": "Sure:\n```python\nprint('x')\n```\n"}
TOOL_CALL = {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function",
                             "function": {"name": "get_weather",
                                          "arguments": {"city": "Paris", "unit": "°C", "days": 3, "ok": True,
                                                        "ratio": 0.5, "tags": ["a", None]}}}]}
TOOL = {"role": "tool", "content": "{\"temperature\": 21.5}"}
CONVERSATIONS = {
    "user": [U1],
    "system+user": [SYS, U1],
    "multi-turn": [U1, A1, U2],
    "system+multi-turn": [SYS, U1, A1, U2, A2, U3],
    "unicode": [U3],
    "ends-with-assistant": [U1, A1],
    "two-users": [U1, U2],
    "tool-call": [SYS, U1, TOOL_CALL, TOOL],
    "empty": [],
}
# bos/eos texts each model's tokenizer gives its template
TOKENS = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "llama2": ("<s>", "</s>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.3-generation": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral-v0.1": ("<s>", "</s>"),
    "qwen2": ("", "<|im_end|>"),
    "qwen2.5": ("", "<|im_end|>"),
    "zephyr": ("<s>", "</s>"),
    "phi3": ("<s>", "<|endoftext|>"),
    "gemma": ("<bos>", "<eos>"),
}
# The built-ins and the real template each equals.
BUILTIN_OF = {
    "chatml": ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
               "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
               "{% endif %}", "", "<|im_end|>"),
    "llama2": ("llama2", None, None),
    "llama3": ("llama3", None, None),
    "mistral": ("mistral-v0.1", None, None),
    "zephyr": ("zephyr", None, None),
}


def template_text(name):
    with open(os.path.join(HERE, "templates", name + ".jinja"), encoding="utf-8") as f:
        return f.read()


# name, template, messages, add_generation_prompt, bos, eos, and the reference
cases, labels, refs = [], [], []


def add(label, template, messages, agp, bos, eos, builtin=None, ref_template=None):
    c = {"messages": messages, "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos}
    if builtin:
        c["builtin"] = builtin
    else:
        c["template"] = template
    cases.append(c)
    labels.append(label)
    refs.append(reference(ref_template or template, messages, agp, bos, eos))


for name, (bos, eos) in TOKENS.items():
    text = template_text(name)
    for conv, msgs in CONVERSATIONS.items():
        for agp in (False, True):
            add(f"{name} / {conv} / agp={agp}", text, msgs, agp, bos, eos)

for builtin, (ref, bos, eos) in BUILTIN_OF.items():
    ref_text = ref if ref.startswith("{") else template_text(ref)
    if bos is None:
        bos, eos = TOKENS[ref]
    for conv, msgs in CONVERSATIONS.items():
        if conv == "tool-call":
            continue  # the built-ins render role and content only
        for agp in (False, True):
            add(f"built-in {builtin} / {conv} / agp={agp}", None, msgs, agp, bos, eos, builtin=builtin,
                ref_template=ref_text)

# Probes of each construct, rendered with messages=[U1, A1] and bos/eos.
PROBES = [
    # whitespace control, trim_blocks, lstrip_blocks, comments, raw
    "a\n  {% if true %}\n  b\n  {% endif %}\nc",
    "a  {%- if true -%}  b  {%- endif -%}  c",
    "x\n    {{ 1 }}\n  {# note #}\n  y\n{%+ if true %}z{% endif +%}\nw",
    "{% raw %}{{ not evaluated }}{% endraw %}|{%- raw -%}  {% x %}  {%- endraw %}|",
    "line1\r\nline2\rline3\n",
    "{{ 'a' }}\n\n",
    "  {% for m in messages %}\n    [{{ m.role }}]\n  {% endfor %}\n",
    # scoping: loops, ifs, macros, namespaces
    "{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = i * 10 %}{{ x }},{% endfor %}{{ x }}",
    "{% if true %}{% set y = 'in-if' %}{% endif %}{{ y }}",
    "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
    "{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }}{{ ns.s }}",
    "{% macro greet(who, punct='!') %}Hello {{ who }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }}"
    " {{ greet(punct='.', who='c') }}",
    "{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inside{% endcall %}",
    "{% set z = 5 %}{% macro m() %}{{ z }}{% endmacro %}{% set z = 6 %}{{ m() }}",
    "{% set block %}captured {{ 1 + 1 }}{% endset %}{{ block | upper }}",
    "{% filter upper %}shout {{ 'it' }}{% endfilter %}",
    # loops
    "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.first }}/{{ loop.last }}"
    "/{{ loop.length }};{% endfor %}",
    "{% for m in [] %}x{% else %}empty{% endfor %}",
    "{% for i in range(10) if i is odd %}{{ i }}{{ loop.length }},{% endfor %}",
    "{% for i in range(10) %}{% if i == 3 %}{% continue %}{% endif %}{% if i == 6 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for k, v in {'a': 1, 'b': [2]}.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}{% for c in 'héllo' %}{{ c }}.{% endfor %}",
    "{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    "{% for a in [[1, 2], [3, 4]] %}{% for b in a %}{{ loop.index }}{{ b }}{% endfor %}{% endfor %}",
    "{{ range(5) | list }} {{ range(2, 10, 3) | list }} {{ range(5, 0, -2) | list }}",
    # values: str() and repr() as Python prints them
    "{{ none }} {{ true }} {{ false }} {{ 1 }} {{ -7 }} {{ 1.0 }} {{ 2.5e-7 }} {{ 1e16 }} {{ 123456789.125 }} "
    "{{ 0.1 + 0.2 }} {{ 1/3 }} {{ 10/4 }}",
    "{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}] }} {{ {'a': \"it's\", 'b': 'say \"hi\"', 'c': 'x\\ny'} }}",
    "{{ ('a', 1) }} {{ [] }} {{ {} }} {{ 'tab\\there' }} {{ ['tab\\t', 'é', '\\u00a0'] }}",
    "{{ undefined_name }}|{{ messages[5] }}|{{ messages[0].nothing }}|{{ messages[0]['nothing'] }}|",
    # operators
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} "
    "{{ 3 * 'ab' }} {{ [1] * 3 }} {{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }}",
    "{{ 'a' ~ 1 ~ none ~ true }} {{ 'x' + 'y' }} {{ [1] + [2, 3] }} {{ 1 + true }} {{ 1.5 + 1 }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == [1, 2] }} "
    "{{ {'a': 1} == {'a': 1} }} {{ none == none }} {{ 'a' != 'b' }} {{ 2 >= 2 }} {{ 1 <= 0 }}",
    "{{ 'b' in 'abc' }} {{ 'z' not in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ not 'role' in messages[0] }}",
    "{{ true and 'x' }} {{ false or 'y' }} {{ none or [] or 'z' }} {{ 0 and 1 }} {{ not none }} {{ 'a' if 1 > 2 else 'b' }}"
    " {{ 'c' if false }}|",
    "{{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages[1:] | length }} {{ messages[::-1][0].role }} "
    "{{ 'hello'[1:4] }} {{ 'hello'[::-1] }} {{ 'hello'[-2:] }} {{ [1, 2, 3, 4, 5][1::2] }} {{ 'héllo'[1] }}",
    # filters
    "{{ '  pad  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'MiXeD' | upper }}{{ 'MiXeD' | lower }}"
    "|{{ 'hello world' | capitalize }}|{{ 'hello wORLD-foo (bar' | title }}|{{ 'abc' | length }}{{ [1, 2] | count }}",
    "{{ messages | tojson }}\n{{ {'b': 1, 'a': [1, 2.5, none, true, 'é\"<>&']} | tojson }}\n"
    "{{ {'b': 1, 'a': {'c': []}} | tojson(indent=2) }}\n{{ {'b': 1, 'a': 'é'} | tojson(ensure_ascii=true, sort_keys=true) }}"
    "\n{{ 'x' | tojson }}{{ 3 | tojson }}{{ 1.0 | tojson }}{{ [] | tojson(indent=4) }}{{ {'e': {}} | tojson(indent=4) }}",
    "{{ missing | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }} "
    "{{ missing | d('dd') }}",
    "{{ ['a', 'b', 'c'] | join }} {{ ['a', 'b'] | join(', ') }} {{ [1, 2] | join('-') }} {{ messages | join('|', "
    "attribute='role') }}",
    "{{ [3, 1, 2] | first }} {{ [3, 1, 2] | last }} {{ 'xyz' | first }} {{ [] | first }}|{{ 42 | string }} "
    "{{ '42' | int + 1 }} {{ '3.7' | int }} {{ 'x' | int }} {{ 3.9 | int }} {{ '2.5' | float }} {{ true | int }}",
    "{{ 'a-b-a' | replace('a', 'o') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ {'k': 1, 'j': [2]} | items | list }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} "
    "{{ messages | rejectattr('role', 'equalto', 'user') | list | length }} {{ [1, 2, 3, 4] | select('even') | list }}"
    " {{ [1, 0, 2] | select | list }} {{ ['a', 'B'] | map('upper') | list }} {{ [1, 2, 3] | reject('odd') | list }}",
    "{{ [1, 2, 2, 1] | unique | list }} {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }} {{ -3 | abs }} "
    "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ '<a href=\"x\">' | e }}|{{ 'x' | safe }}",
    # tests
    "{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} "
    "{{ [] is sequence }} {{ 'a' is sequence }} {{ 1 is number }} {{ true is number }} {{ 1.5 is number }} "
    "{{ true is boolean }} {{ 1 is boolean }} {{ [] is iterable }} {{ 1 is iterable }} {{ 1 is integer }} "
    "{{ 1.0 is float }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }} "
    "{{ 'AB' is upper }} {{ 1 is equalto 1 }} {{ 2 is eq(2) }} {{ 'a' is in 'abc' }} {{ 1 is not none }} "
    "{{ range is callable }} {{ true is true }} {{ 0 is false }} {{ 1 is sameas 1 }} {{ 3 is gt 2 }} {{ 3 is lt(2) }}",
    # string and dict methods
    "{{ '  s  '.strip() }}|{{ 'xxsxx'.strip('x') }}|{{ '  s  '.lstrip() }}|{{ '  s  '.rstrip() }}|"
    "{{ 'a b  c'.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a b c'.split(' ', 1) }}{{ ' x y '.split(none, 1) }}",
    "{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'ab'.upper() }}{{ 'AB'.lower() }} "
    "{{ 'hello WORLD 3rd x-y'.title() }} {{ 'hELLO'.capitalize() }} {{ 'aXbXc'.replace('X', '-') }} "
    "{{ 'abcabc'.find('c') }} {{ 'abcabc'.count('bc') }} {{ '-'.join(['x', 'y']) }}",
    "{{ messages[0].get('role') }} {{ messages[0].get('nope', 'dflt') }} {{ messages[0].get('nope') }} "
    "{{ messages[0].keys() | list }} {{ messages[0].values() | list }} {{ messages[0].items() | list }}",
    "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ strftime_now('%Y') | length }} {{ bos_token }}{{ eos_token }}"
    "{{ add_generation_prompt }} {{ tools }} {{ documents }} {{ tools is none }}",
    # string literals and escapes
    "{{ 'a\\tb\\\\c\\'d\"' }} {{ \"q'q\" }} {{ 'u\\u00e9\\x41\\101' }} {{ 'no\\d' }} {{ 'ad' 'jacent' }}",
    # errors transformers raises too
    "{{ raise_exception('stop here') }}",
    "{{ 'a' + 1 }}",
    "{{ messages[9].role }}",
    "{{ 1 / 0 }}",
    "{% for x in 5 %}{% endfor %}",
    "{{ messages.append(1) }}",
    "{% if %}",
    "{{ 'unclosed }}",
    "{% for m in messages %}no end",
    "{{ x.y.z }}",
]
# transformers' reasoning aliases (thinking / reasoning_content)
REASONING = [U1, {"role": "assistant", "content": "Answer", "reasoning": "thought"}, U2,
             {"role": "assistant", "content": "B", "thinking": "t2", "reasoning_content": None}]
add("reasoning aliases", "{% for m in messages %}{{ m.thinking }}|{{ m.reasoning_content }}|{{ m | tojson }};"
    "{% endfor %}", REASONING, False, "", "")

for k, p in enumerate(PROBES):
    for agp in (False, True):
        add(f"probe {k} / agp={agp}: {p[:60]!r}", p, [U1, A1], agp, "<s>", "</s>")

got = ctorch_render(cases)
compared = errors_both = 0
for label, ref, out in zip(labels, refs, got):
    if isinstance(ref, tuple):
        check("error" in out, f"{label}: transformers raised ({ref[1]}) but ctorch rendered {out.get('text')!r}")
        errors_both += 1
    else:
        check(out.get("text") == ref, f"{label}:\n  transformers {ref!r}\n  ctorch       {out!r}")
    compared += 1

# The bounds: refused, naming the bound; a template within them renders.
BOUNDS = [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "step bound"),
    ("{{ 'x' * 100000000 }}", "output bound"),
    ("{% set s = 'abcdefgh' * 1024 %}{% for i in range(100000) %}{{ s }}{% endfor %}", "output bound"),
    ("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "macro calls nest deeper"),
    ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nesting deeper"),
    ("{% if true %}" * 3000 + "{% endif %}" * 3000, "nesting deeper"),
    ("{{ x | no_such_filter }}", "unknown filter 'no_such_filter'"),
    ("{{ x is no_such_test }}", "unknown test 'no_such_test'"),
    ("{% frobnicate %}", "unknown statement 'frobnicate'"),
    ("{{ range(1000000) }}", "more than 100000"),
    ("{{ " + "1 + " * 100000 + "1 }}", "nesting deeper"),
    ("{{ x" + ".a" * 100000 + " }}", "nesting deeper"),
    ("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}",
     "a value nests deeper"),
    ("{% set ns = namespace() %}{% set ns.me = ns %}", "may not hold a namespace"),
    ("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
     "step bound"),
    ("{% set s = 'x' * 1000000 %}{% for i in range(100000) %}{{ s[5] }}{% endfor %}", "step bound"),
]
bound_cases = [{"template": t, "messages": [U1], "add_generation_prompt": False} for t, _ in BOUNDS]
for (t, want), out in zip(BOUNDS, ctorch_render(bound_cases)):
    check(want in out.get("error", ""), f"bound {t[:50]!r}: expected a refusal naming {want!r}, got {out!r}")

print(f"{compared} renders compared with transformers ({errors_both} where both refuse), "
      f"{len(BOUNDS)} bounds checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
