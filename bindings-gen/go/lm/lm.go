// Package lm runs language models from Go: load a causal LM (a Hugging Face
// folder or a GGUF file), tokenize, apply its chat template and stream
// generated text, over the C API's ctorch_lm_* functions (include/ctorch.h,
// "Language models"; docs/llm.md).
//
//	model, err := lm.Load(path, nil)
//	msgs := []lm.Message{{Role: "user", Content: "Hi!"}}
//	for piece, err := range model.Chat(ctx, msgs, &lm.Options{MaxTokens: 32}) {
//		...
//	}
//
// A Model may be used by several goroutines at once (tokenize, chat and
// generate concurrently); a Session, Sampler, Generation or Detokenizer by
// one at a time. Sessions, generations and detokenizers keep their model
// alive. Every method is safe on a nil receiver (it returns an error).
package lm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	ctorch "github.com/ctorch/ctorch-go"
)

// Message is one turn of a conversation for a chat template.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LoadOptions chooses the arithmetic and the device; the zero value is
// float32 on the CPU.
type LoadOptions struct {
	DType  string // "float32" (default), "bfloat16", "float16"
	Device string // "cpu" (default), "cuda", "cuda:N"
	// Weights: "packed" (a GGUF file's quantised matrices multiplied as
	// they are on the CPU, the default) or "dequantize".
	Weights string
	// Quantize: "q8_0", "q4_0" or "q4_1" packs float matrices as they load (CPU).
	Quantize string
	// Activations: "float" (default) or "int8": the packed matrices multiply
	// activations rounded to 8 bits, as llama.cpp does (CPUs with AVX-512 VNNI).
	Activations string
	// RandomSeed >= 0 with Random: weights drawn from the configuration (for speed measurements).
	Random     bool
	RandomSeed int64
}

// SamplerOptions is the sampler chain, in transformers' order; the zero
// value is greedy. A field's zero value leaves its processor off.
type SamplerOptions struct {
	RepetitionPenalty float64 // transformers' RepetitionPenaltyLogitsProcessor (0 or 1: off)
	FrequencyPenalty  float64 // the OpenAI API's (0: off)
	PresencePenalty   float64 // the OpenAI API's (0: off)
	Temperature       float64 // 0: greedy
	TopK              int64   // 0: off
	TopP              float64 // 0 or 1: off
	MinP              float64 // 0: off
	Seed              int64   // the draw's generator
}

// Options is one generation's: its sampler, when it stops, and the
// session's size.
type Options struct {
	SamplerOptions
	MaxTokens   int64    // new ids at most (0: until the context is full)
	Stop        []string // the text ends before the first of these
	StopIDs     []int64  // ids that end the generation
	KeepSpecial bool     // special tokens give their text (default: none)
	// NCtx: the session's positions (0: the prompt and MaxTokens, or the
	// model's training context when MaxTokens is 0).
	NCtx int64
}

var errNil = errors.New("lm: nil or closed handle")

// optionsText is the C API's "key=value,..." text; a value holding ',' or
// '=' is refused, since it would change the text's structure.
func optionsText(kv ...string) (*string, error) {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if strings.ContainsAny(kv[i+1], ",=") {
			return nil, fmt.Errorf("lm: option %s=%q may not contain ',' or '='", kv[i], kv[i+1])
		}
		parts = append(parts, kv[i]+"="+kv[i+1])
	}
	if len(parts) == 0 {
		return nil, nil
	}
	s := strings.Join(parts, ",")
	return &s, nil
}

func num(x float64, off float64) string {
	if x == off || math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// Model is a loaded language model: weights, configuration, tokenizer, chat template.
type Model struct {
	m *ctorch.LmModel
}

// Load loads a folder as save_pretrained writes it, or a GGUF file.
func Load(path string, opts *LoadOptions) (*Model, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	kv := []string{"dtype", o.DType, "device", o.Device, "weights", o.Weights, "quantize", o.Quantize,
		"activations", o.Activations}
	if o.Random {
		kv = append(kv, "init", "random", "seed", strconv.FormatInt(o.RandomSeed, 10))
	}
	text, err := optionsText(kv...)
	if err != nil {
		return nil, err
	}
	m, err := ctorch.LmLoad(path, text)
	if err != nil {
		return nil, err
	}
	return &Model{m: m}, nil
}

// Handle is the generated ctorch.LmModel, for the ctorch.Lm* functions.
func (m *Model) Handle() *ctorch.LmModel {
	if m == nil {
		return nil
	}
	return m.m
}

func (m *Model) handle() (*ctorch.LmModel, error) {
	if m == nil || m.m == nil {
		return nil, errNil
	}
	return m.m, nil
}

// Free frees the model now (its sessions and generations keep it alive).
func (m *Model) Free() {
	if m != nil {
		m.m.Free()
	}
}

// Info is ctorch_lm_describe's object: architecture, n_layer, n_vocab,
// n_ctx_train, dtype, device, bos, eos, has_chat_template, ...
func (m *Model) Info() (map[string]any, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	s, err := ctorch.LmDescribe(h)
	if err != nil {
		return nil, err
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(s), &info); err != nil {
		return nil, fmt.Errorf("lm: ctorch_lm_describe: %w", err)
	}
	return info, nil
}

// Tokenize returns text's ids, as transformers' tokenizer(text,
// add_special_tokens=addSpecial); special tokens written in the text are
// single ids.
func (m *Model) Tokenize(text string, addSpecial bool) ([]int64, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	t, err := ctorch.LmTokenize(h, text, addSpecial, true)
	if err != nil {
		return nil, err
	}
	defer t.Free()
	return t.Int64s()
}

// Detokenize returns the text of ids, as transformers' decode(ids, skip_special_tokens=skipSpecial).
func (m *Model) Detokenize(ids []int64, skipSpecial bool) (string, error) {
	h, err := m.handle()
	if err != nil {
		return "", err
	}
	return ctorch.LmDetokenize(h, ids, skipSpecial)
}

// ApplyTemplate renders messages through the model's chat template, as
// transformers' apply_chat_template(messages, tokenize=False,
// add_generation_prompt=...); template: "" for the model's own, a
// template's text, or "chatml", "llama2", "llama3", "mistral", "zephyr".
func (m *Model) ApplyTemplate(messages []Message, addGenerationPrompt bool, template string) (string, error) {
	h, err := m.handle()
	if err != nil {
		return "", err
	}
	if messages == nil {
		messages = []Message{}
	}
	js, err := json.Marshal(messages)
	if err != nil {
		return "", err
	}
	var tmpl *string
	if template != "" {
		tmpl = &template
	}
	return ctorch.LmChatApply(h, string(js), addGenerationPrompt, tmpl)
}

// ChatIDs is the prompt of a chat: the template with the generation prompt,
// tokenized without adding specials (as apply_chat_template(tokenize=True)).
func (m *Model) ChatIDs(messages []Message) ([]int64, error) {
	text, err := m.ApplyTemplate(messages, true, "")
	if err != nil {
		return nil, err
	}
	return m.Tokenize(text, false)
}

// NewSession makes a KV cache of nSeq sequences of nCtx positions each
// (nCtx 0: the model's training context).
func (m *Model) NewSession(nCtx, nSeq int64) (*Session, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	s, err := ctorch.LmSessionNew(h, nCtx, nSeq)
	if err != nil {
		return nil, err
	}
	return &Session{s: s, model: m}, nil
}

// Start begins a generation from ids in a session of its own. The caller
// reads it (Pieces or Next) and closes it.
func (m *Model) Start(prompt []int64, opts *Options) (*Generation, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	nCtx := o.NCtx
	if nCtx == 0 && o.MaxTokens > 0 {
		nCtx = int64(len(prompt)) + o.MaxTokens
	}
	s, err := m.NewSession(nCtx, 1)
	if err != nil {
		return nil, err
	}
	g, err := s.Start(0, prompt, &o)
	if err != nil {
		s.Free()
		return nil, err
	}
	g.owned = s
	return g, nil
}

// Generate streams the text generated from prompt (tokenized with the
// tokenizer's specials): range over it for the pieces; an error ends it.
// Cancelling ctx stops the generation between two tokens, with ctx's error.
func (m *Model) Generate(ctx context.Context, prompt string, opts *Options) iter.Seq2[string, error] {
	return m.run(ctx, func() ([]int64, error) { return m.Tokenize(prompt, true) }, opts)
}

// Chat streams the assistant's answer to messages, through the model's chat template.
func (m *Model) Chat(ctx context.Context, messages []Message, opts *Options) iter.Seq2[string, error] {
	return m.run(ctx, func() ([]int64, error) { return m.ChatIDs(messages) }, opts)
}

func (m *Model) run(ctx context.Context, ids func() ([]int64, error), opts *Options) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		prompt, err := ids()
		if err != nil {
			yield("", err)
			return
		}
		g, err := m.Start(prompt, opts)
		if err != nil {
			yield("", err)
			return
		}
		defer g.Free()
		for piece, err := range g.Pieces(ctx) {
			if !yield(piece, err) {
				return
			}
		}
	}
}

// Session is a KV cache of sequences 0..n_seq-1 over one model.
type Session struct {
	s     *ctorch.LmSession
	model *Model
}

func (s *Session) handle() (*ctorch.LmSession, error) {
	if s == nil || s.s == nil {
		return nil, errNil
	}
	return s.s, nil
}

// Free frees the session now.
func (s *Session) Free() {
	if s != nil {
		s.s.Free()
	}
}

// Decode appends tokens to sequence seq: the float32 logits of the last
// position ([1, V]), or of every new one ([len(tokens), V]) with allLogits.
func (s *Session) Decode(seq int64, tokens []int64, allLogits bool) (*ctorch.Tensor, error) {
	h, err := s.handle()
	if err != nil {
		return nil, err
	}
	return ctorch.LmDecode(h, seq, tokens, allLogits)
}

// Length is the number of positions sequence seq holds.
func (s *Session) Length(seq int64) (int64, error) {
	h, err := s.handle()
	if err != nil {
		return 0, err
	}
	return h.Length(seq)
}

// Rewind forgets sequence seq from position pos on.
func (s *Session) Rewind(seq, pos int64) error {
	h, err := s.handle()
	if err != nil {
		return err
	}
	return h.Rewind(seq, pos)
}

// Fork makes sequence dst a copy of the first pos positions of sequence src.
func (s *Session) Fork(dst, src, pos int64) error {
	h, err := s.handle()
	if err != nil {
		return err
	}
	return h.Fork(dst, src, pos)
}

// Start begins a generation on sequence seq from prompt (empty: continue
// from what it holds). The session is held until the generation is closed
// or ends.
func (s *Session) Start(seq int64, prompt []int64, opts *Options) (*Generation, error) {
	h, err := s.handle()
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	sp, err := NewSampler(&o.SamplerOptions)
	if err != nil {
		return nil, err
	}
	defer sp.Free() // the stream keeps its own reference
	maxTokens := ""
	if o.MaxTokens > 0 {
		maxTokens = strconv.FormatInt(o.MaxTokens, 10)
	}
	text, err := optionsText("max_tokens", maxTokens, "skip_special", map[bool]string{true: "0", false: "1"}[o.KeepSpecial])
	if err != nil {
		return nil, err
	}
	if prompt == nil {
		prompt = []int64{}
	}
	st, err := ctorch.LmStreamNew(h, seq, sp.s, prompt, text)
	if err != nil {
		return nil, err
	}
	g := &Generation{st: st}
	for _, stop := range o.Stop {
		if err := st.StopString(stop); err != nil {
			g.Free()
			return nil, err
		}
	}
	for _, id := range o.StopIDs {
		if err := st.StopToken(id); err != nil {
			g.Free()
			return nil, err
		}
	}
	return g, nil
}

// Sampler is a sampler chain with its own seeded generator.
type Sampler struct {
	s *ctorch.LmSampler
}

// NewSampler makes the chain opts describes (nil: greedy).
func NewSampler(opts *SamplerOptions) (*Sampler, error) {
	var o SamplerOptions
	if opts != nil {
		o = *opts
	}
	topK := ""
	if o.TopK != 0 {
		topK = strconv.FormatInt(o.TopK, 10)
	}
	text, err := optionsText("repetition_penalty", num(o.RepetitionPenalty, 0), "frequency_penalty",
		num(o.FrequencyPenalty, 0), "presence_penalty", num(o.PresencePenalty, 0), "temperature",
		num(o.Temperature, 0), "top_k", topK, "top_p", num(o.TopP, 0), "min_p", num(o.MinP, 0),
		"seed", strconv.FormatInt(o.Seed, 10))
	if err != nil {
		return nil, err
	}
	s, err := ctorch.LmSamplerNew(text)
	if err != nil {
		return nil, err
	}
	return &Sampler{s: s}, nil
}

// Free frees the sampler now.
func (s *Sampler) Free() {
	if s != nil {
		s.s.Free()
	}
}

// Sample chooses one id from logits ([V] or [1, V]) given the ids so far.
func (s *Sampler) Sample(logits *ctorch.Tensor, history []int64) (int64, error) {
	if s == nil || s.s == nil {
		return 0, errNil
	}
	return s.s.Sample(logits, history)
}

// Generation is a generation in progress, read piece by piece.
type Generation struct {
	st     *ctorch.LmStream
	owned  *Session // the session Model.Start made for it
	ids    []int64
	reason string
}

// Next generates until a piece of text is complete: the piece (never a
// split character, never a part of a stop string) and whether the
// generation goes on; ("", false, nil) once it has ended.
func (g *Generation) Next() (string, bool, error) {
	if g == nil {
		return "", false, errNil
	}
	for g.st != nil {
		text, id, done, err := g.st.Next()
		if err != nil {
			return "", false, err
		}
		if id >= 0 {
			g.ids = append(g.ids, id)
		}
		if done != 0 {
			g.reason, _ = g.st.FinishReason()
			g.Free()
		}
		if text != "" {
			return text, true, nil
		}
	}
	return "", false, nil
}

// Pieces ranges over the rest of the text; cancelling ctx ends it with
// ctx's error (checked before each token).
func (g *Generation) Pieces(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for {
			if ctx != nil {
				if err := ctx.Err(); err != nil {
					g.Free()
					yield("", err)
					return
				}
			}
			piece, ok, err := g.Next()
			if err != nil {
				yield("", err)
				return
			}
			if !ok || !yield(piece, nil) {
				return
			}
		}
	}
}

// IDs are the ids generated so far (a stop id included).
func (g *Generation) IDs() []int64 {
	if g == nil {
		return nil
	}
	return g.ids
}

// FinishReason is "stop" or "length" once the generation ended, "" before.
func (g *Generation) FinishReason() string {
	if g == nil {
		return ""
	}
	return g.reason
}

// Free ends the generation now (what its session holds stays).
func (g *Generation) Free() {
	if g == nil {
		return
	}
	g.st.Free()
	g.st = nil
	if g.owned != nil {
		g.owned.Free()
		g.owned = nil
	}
}
