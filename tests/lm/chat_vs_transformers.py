#!/usr/bin/env python3
"""ctorch's chat templates against transformers' apply_chat_template.

Renders, with the interpreter (lm_chat_render, argv[1]) and with transformers'
render path (render_jinja_template, or on older releases the compiled
template apply_chat_template renders; tokenize=False):
  - the real models' templates in templates/ (SOURCES.md names each) on
    conversations with and without a system message, multi-turn, tool calls,
    content as a list of chunks, Unicode and whitespace, with and without
    add_generation_prompt, and with tools' JSON schemas for the templates
    that take them;
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


def reference(template, messages, agp, bos, eos, tools=None):
    """transformers' text, or ('error', message)."""
    try:
        if hasattr(cu, "render_jinja_template"):
            out, _ = cu.render_jinja_template(conversations=[messages], chat_template=template, tools=tools,
                                              add_generation_prompt=agp, bos_token=bos, eos_token=eos)
            return out[0]
        compiled = cu._compile_jinja_template(template)
        return compiled.render(messages=messages, tools=tools, documents=None, add_generation_prompt=agp,
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
# A call with the nine-character id Mistral's templates check, and its answer.
TOOL_CALL_ID = {"role": "assistant", "content": "",
                "tool_calls": [{"id": "a1B2c3D4e", "type": "function",
                                "function": {"name": "get_weather", "arguments": {"unit": "C", "city": "Zürich"}}}]}
TOOL_ID = {"role": "tool", "tool_call_id": "a1B2c3D4e", "name": "get_weather", "content": "{\"temp\": 4}"}
# Content as chunks (text and image), as multimodal templates take it.
CHUNKS = {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, {"type": "image"}]}
CONVERSATIONS = {
    "user": [U1],
    "system+user": [SYS, U1],
    "multi-turn": [U1, A1, U2],
    "system+multi-turn": [SYS, U1, A1, U2, A2, U3],
    "unicode": [U3],
    "ends-with-assistant": [U1, A1],
    "two-users": [U1, U2],
    "tool-call": [SYS, U1, TOOL_CALL, TOOL],
    "tool-call-id": [SYS, U1, TOOL_CALL_ID, TOOL_ID],
    "chunks": [CHUNKS],
    "empty": [],
}
# The tools' JSON schemas (as transformers' get_json_schema writes them),
# given to the templates that read `tools`, on these conversations.
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city, e.g. \"Paris\""},
            "unit": {"type": "string", "enum": ["C", "F"], "description": "The unit."},
            "days": {"type": "integer", "description": "How many days ahead."}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Terms."},
            "sites": {"type": "array", "items": {"type": "string"}, "description": "Sites to search."}},
            "required": ["query", "sites"]},
        "return": {"type": "string", "description": "The results."}}},
]
TOOL_CONVERSATIONS = ("user", "system+user", "system+multi-turn", "tool-call-id")
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
    "mistral-v0.3": ("<s>", "</s>"),
    "llama3.1": ("<|begin_of_text|>", "<|eot_id|>"),
    "ministral3-reasoning": ("<s>", "</s>"),
    "gemma4": ("<bos>", "<eos>"),
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


def add(label, template, messages, agp, bos, eos, builtin=None, ref_template=None, tools=None):
    c = {"messages": messages, "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos}
    if tools is not None:
        c["tools"] = tools
    if builtin:
        c["builtin"] = builtin
    else:
        c["template"] = template
    cases.append(c)
    labels.append(label)
    refs.append(reference(ref_template or template, messages, agp, bos, eos, tools))


for name, (bos, eos) in TOKENS.items():
    text = template_text(name)
    for conv, msgs in CONVERSATIONS.items():
        for agp in (False, True):
            add(f"{name} / {conv} / agp={agp}", text, msgs, agp, bos, eos)
    if "tools" in text:
        for conv in TOOL_CONVERSATIONS:
            for agp in (False, True):
                add(f"{name} / {conv} + tools / agp={agp}", text, CONVERSATIONS[conv], agp, bos, eos, tools=TOOLS)

for builtin, (ref, bos, eos) in BUILTIN_OF.items():
    ref_text = ref if ref.startswith("{") else template_text(ref)
    if bos is None:
        bos, eos = TOKENS[ref]
    for conv, msgs in CONVERSATIONS.items():
        if conv in ("tool-call", "tool-call-id", "chunks"):
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
    # letter case over Unicode (Python's str methods, jinja2's filters)
    "{{ 'Grüße ß ǆ İstanbul ΣΑΣ ΟΔΟΣ. straße' | upper }}|{{ 'ΟΔΟΣ ΣΑΣ. İI ǅ' | lower }}|"
    "{{ 'ǆemal straße ΣΑΣ-ΟΔΟΣ (éa' | title }}|{{ 'ǆemal ΟΔΟΣ' | capitalize }}|{{ \"they're bill's 3rd\" | title }}",
    "{{ 'ǆemal straße ΣΑΣ 3rd éa-b'.title() }}|{{ 'ΣΑΣ'.capitalize() }}|{{ 'ßx'.capitalize() }}|{{ 'ﬁne ǈ'.title() }}|"
    "{{ 'ΑΣ.'.lower() }}{{ 'Α.Σ'.lower() }}{{ 'ΑΣ\\u0301'.lower() }}{{ 'ΑΣ ΒΣ'.capitalize() }}{{ 'x-ΑΣ' | title }}"
    "{{ 'ŉ'.upper() }}{{ 'ΐ'.upper() }}{{ 'ﬃ'.upper() }}{{ 'ǳ'.title() }}",
    "{{ 'ÉÉ' is upper }}{{ 'éé' is lower }}{{ 'ǅ' is upper }}{{ '1' is lower }}{{ 'aB' is lower }}{{ 'ß' is lower }}"
    "{{ '' is lower }}{{ 'ÀB' is upper }}",
    # sort and dictsort
    "{{ [3, 1, 2] | sort }}{{ ['banana', 'Apple', 'cherry'] | sort }}{{ ['banana', 'Apple', 'cherry'] | sort(case_sensitive=true) }}"
    "{{ [1, 3, 2] | sort(reverse=true) }}{{ [1, 3, 2] | sort(true) }}{{ ['b', 'A', 'a', 'B'] | sort }}{{ ['b', 'A', 'a', 'B'] | sort(true) }}"
    "{{ ['é', 'E', 'e', 'É', 'z', 'Z'] | sort }}{{ ['ß', 'SS', 'ss'] | sort }}{{ [2.5, 1, true, -3] | sort(reverse=true) }}",
    "{% set users = [{'name': 'bob', 'age': 30}, {'name': 'Alice', 'age': 25}, {'name': 'carl', 'age': 30}, "
    "{'name': 'dan', 'age': 25}] %}{{ users | sort(attribute='name') | map(attribute='name') | list }}"
    "{{ users | sort(attribute='age', reverse=true) | map(attribute='name') | list }}"
    "{{ users | sort(attribute='age,name') | map(attribute='name') | list }}{{ users | sort(false, false, 'name') | map(attribute='name') | list }}",
    "{% set items = [{'d': {'p': 3}, 'n': 'x'}, {'d': {'p': 1}, 'n': 'y'}] %}{{ items | sort(attribute='d.p') | map(attribute='n') | list }}"
    "{{ [[2, 'b'], [1, 'z'], [2, 'a']] | sort }}{{ [[2, 'b'], [1, 'z'], [2, 'a']] | sort(attribute='1') }}{{ [none, none] | sort }}"
    "{{ [0, true, false, 1, 0.5] | sort }}{{ 'cab' | sort }}{{ {'b': 1, 'a': 2} | sort }}{{ messages | sort(attribute='role') | map(attribute='content') | list }}",
    "{% set d = {'b': 1, 'A': 3, 'a': 2, 'C': 0} %}{{ d | dictsort }}{{ d | dictsort(true) }}{{ d | dictsort(by='value') }}"
    "{{ d | dictsort(reverse=true) }}{{ d | dictsort(false, 'value', true) }}{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}"
    "{{ {'a': [1, 2], 'b': [1, 1]} | dictsort(by='value') }}{{ {} | dictsort }}",
    "{{ [1, 2] < [1, 3] }}{{ [1, 2] < [1, 2, 0] }}{{ (1, 'b') > (1, 'a') }}{{ [2] >= [1, 9] }}",
    "{{ [1, 'a'] | sort }}",
    "{{ [none, 1] | sort }}",
    "{{ {'a': 1} | dictsort(by='x') }}",
    "{{ [1] | dictsort }}",
    "{{ [1] < (1,) }}",
    # str.format
    "{{ '{} and {}'.format('a', 1) }}|{{ '{1}{0}{1}'.format('a', 'b') }}|{{ '{name}!'.format(name='x') }}|"
    "{{ '{0[role]} {0.content} {1[1]} {2[0]}'.format(messages[0], [5, 6], 'ab') }}|{{ '{{}} {{x}}'.format() }}|"
    "{{ '{!r} {!s:>4}'.format('q', 7) }}|{{ '{0.x} {0[y]}|'.format({'y': 2}) }}{{ '{:{w}}|{:>{}}'.format('a', 'b', 4, w=3) }}",
    "{{ '{:>6}|{:<6}|{:^7}|{:*^7}|{:06}|{:+d}|{: d}|{:,}|{:_}|{:x}|{:#x}|{:#b}|{:o}|{:X}|{:c}|{:=+8}|{:,d}|{:n}'.format("
    "'ab', 'ab', 'ab', 'ab', 42, 5, 5, 1234567, 1234567, 255, 255, 5, 8, 255, 65, 42, -1234567, 1234) }}",
    "{{ '{:.2f}|{:.3e}|{:g}|{:.3g}|{:%}|{:.1%}|{:10.2f}|{:<10.2f}|{:010.2f}|{:,.2f}|{}|{:.3}|{:.3}|{:.3}|{:.3}|{:.1}'.format("
    "3.14159, 31415.9, 0.0001, 1234567.0, 0.25, 0.256, 2.5, 2.5, -2.5, 1234567.891, 0.1, 123.0, 12.0, 1.0, 1e20, 0.5) }}",
    "{{ '{:.0}|{:e}|{:#.0f}|{}|{}|{:f}|{:.3}|{:.3}|{:g}|{:.2}|{:.10}|{:E}|{:G}|{:.0%}'.format("
    "2.5, 5, 3.0, -0.0, 1e16, -1e300, 0.0001234, 0.00001234, 1e16, 99.9, 1/3, 1e-7, 1e-20, 0.5) }}",
    "{{ '{}|{}|{}|{}|{:d}|{:>5}|{:.2f}|{}|{:.2}|{:5}|{:05}'.format(true, none, [1, 'a'], {'k': 1}, true, true, 1, 2.5e-7, "
    "'abcdef', 'é', 'ab') }}",
    "{{ '{} {}'.format('a') }}",
    "{{ '{0} {}'.format('a', 'b') }}",
    "{{ '{x}'.format(y=1) }}",
    "{{ '{:d}'.format('a') }}",
    "{{ '{:d}'.format(1.5) }}",
    "{{ '{:5}'.format([1]) }}",
    "{{ '{:.2d}'.format(3) }}",
    "{{ '{'.format(1) }}",
    # %-formatting: the operator and the format filter
    "{{ '%s and %d' % ('a', 3) }}|{{ '%s' % 'x' }}|{{ '%5s|%-5s|%05d|%+d|%x|%#x|%#o|%X|%e|%.2f|%g|%10.3f|%c|%c|%r|%%|%.2s|%i|%u|%d' % "
    "('a', 'b', 42, 5, 255, 255, 8, 255, 12345.678, 3.14159, 0.0001, 2.5, 65, 'z', 'q', 'abc', 7, 8, 3.9) }}",
    "{{ '%(a)s-%(b)05.1f' % {'a': 'x', 'b': 2.25} }}|{{ '%s' % {'a': 1} }}|{{ 'abc' % {} }}|{{ 'abc' % [1] }}|{{ '%s' % [1, 2] }}"
    "|{{ '%s' % none }}|{{ '%s%s' % (1, none) }}|{{ '%*d|%-*d|%.*f' % (5, 1, 4, 2, 2, 3.14159) }}"
    "|{{ '%+.2e|%#g|% d|%c|%5.1f%%|%-6d|%06.2f|%.0f|%.0f|%s|%r' % (12345.678, 1.0, 5, 128512, 99.55, 3, -1.5, 0.5, 1.5, 1e16, 1e16) }}",
    "{{ '%s, %s!' | format('Hello', 'World') }}|{{ '%(a)s=%(b)d' | format(a='k', b=3) }}|{{ '%s' | format([1]) }}|"
    "{{ '%.3f' | format(2) }}|{{ 'x' | format() }}",
    "{{ '%s|%s' % ('a', (1,)) }}|{{ 'abc' % undefined_name }}|{{ '%s' % undefined_name }}|{{ '{0[}]}'.format({'}': 1}) }}"
    "|{{ [undefined_name, 1] }}|{{ '{!a} %a'.format('é') % 'ß' }}|{{ [] | map(undefined_name) | list }}",
    "{{ '%(a)%' % {'a': 1} }}",
    "{{ '{:-}'.format('x') }}",
    "{{ '{0.a.b}'.format({}) }}",
    "{{ messages | sort(attribute='no.thing') | list }}",
    "{{ 'x' is upper 3 }}",
    "{{ 'abc' % 5 }}",
    "{{ '%s %s' % ('a',) }}",
    "{{ '%s' % ('a', 'b') }}",
    "{{ '%d' % 'a' }}",
    "{{ '%x' % 2.0 }}",
    "{{ '%(x)s' % ('a',) }}",
    "{{ '%y' % 1 }}",
    "{{ '%s %(a)s' | format(1, a=2) }}",
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
    ("{% for i in range(1000) %}{{ range(100000) | sort | length }}{% endfor %}", "step bound"),
    ("{{ '{:99999999}'.format(1) }}", "width or precision past"),
    ("{{ '%099999999d' % 1 }}", "width or precision too big"),
    ("{{ '%.*d' % (-9223372036854775807 - 1, 1) }}", "width or precision too big"),
    ("{% set s = '{:1000000}'.format('') %}{% for i in range(100) %}{{ s }}{% endfor %}", "output bound"),
    ("{% set s = 'ß' * 1000000 %}{% for i in range(100) %}{{ s | upper }}{% endfor %}", "output bound"),
]
bound_cases = [{"template": t, "messages": [U1], "add_generation_prompt": False} for t, _ in BOUNDS]
for (t, want), out in zip(BOUNDS, ctorch_render(bound_cases)):
    check(want in out.get("error", ""), f"bound {t[:50]!r}: expected a refusal naming {want!r}, got {out!r}")

print(f"{compared} renders compared with transformers ({errors_both} where both refuse), "
      f"{len(BOUNDS)} bounds checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
