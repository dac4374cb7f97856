package lm

// Package lm on SmolLM2-135M-Instruct's GGUF against the C API it is made
// of: greedy generation equals decode + argmax step by step and its pieces
// join to Detokenize; a cancelled context ends the range with its error; a
// seeded sampled generation repeats; MaxTokens ends with "length" and a stop
// string ends the text before it. No exported function or method panics on
// nil or zero values. Skipped without the model (tests/bindings/lm_model.py
// sets CTORCH_LM_MODEL) or while the library does not implement ctorch_lm_load.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/internal/zerocall"
)

func TestExportsListed(t *testing.T) { zerocall.CheckComplete(t, ".", exportedFuncs, exportedTypes) }

func TestNilAndZeroValuesDoNotPanic(t *testing.T) {
	nf, nm := zerocall.Sweep(t, exportedFuncs, exportedTypes, nil)
	fmt.Printf("nil/zero sweep of package lm: %d functions, %d methods\n", nf, nm)
	var g *Generation
	if _, _, err := g.Next(); err == nil {
		t.Error("Next on a nil Generation: no error")
	}
	if _, err := optionsText("dtype", "a,b"); err == nil {
		t.Error("optionsText accepted a value with ','")
	}
}

func loadOrSkip(t *testing.T) *Model {
	path := os.Getenv("CTORCH_LM_MODEL")
	if path == "" {
		why := os.Getenv("CTORCH_LM_MODEL_ABSENT")
		if why == "" {
			why = "CTORCH_LM_MODEL is not set (tests/bindings/lm_model.py)"
		}
		t.Skip(why)
	}
	m, err := Load(path, nil)
	var ce *ctorch.Error
	if errors.As(err, &ce) && ce.Status == ctorch.StatusNotImplemented {
		t.Skip("the library does not implement ctorch_lm_load yet: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collect(t *testing.T, seq func(func(string, error) bool)) string {
	var b strings.Builder
	for piece, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if piece == "" {
			t.Error("an empty piece was yielded")
		}
		b.WriteString(piece)
	}
	return b.String()
}

func TestGenerate(t *testing.T) {
	m := loadOrSkip(t)
	defer m.Free()
	ctx := context.Background()
	msgs := []Message{{Role: "user", Content: "What is the capital of France?"}}
	prompt, err := m.ChatIDs(msgs)
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	g, err := m.Start(prompt, &Options{MaxTokens: n})
	if err != nil {
		t.Fatal(err)
	}
	text := collect(t, g.Pieces(ctx))
	if len(g.IDs()) >= n || g.FinishReason() != "stop" {
		t.Errorf("the answer did not end at its end-of-sequence id: %v, finish reason %q", g.IDs(), g.FinishReason())
	}
	fmt.Printf("greedy answer %q: %d ids, %s\n", text, len(g.IDs()), g.FinishReason())
	story, err := m.Tokenize("Once upon a time", true)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := m.Start(story, &Options{MaxTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	if collect(t, ml.Pieces(ctx)); len(ml.IDs()) != 5 || ml.FinishReason() != "length" {
		t.Errorf("MaxTokens 5: %v, %q", ml.IDs(), ml.FinishReason())
	}
	if want, _ := m.Detokenize(g.IDs(), true); text != want {
		t.Errorf("pieces %q, detokenize %q", text, want)
	}
	if again := collect(t, m.Chat(ctx, msgs, &Options{MaxTokens: n})); again != text {
		t.Errorf("Chat %q, Start %q", again, text)
	}
	// Decode + argmax, step by step.
	s, err := m.NewSession(int64(len(prompt))+n, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Free()
	toks := prompt
	for i := range g.IDs() {
		logits, err := s.Decode(0, toks, false)
		if err != nil {
			t.Fatal(err)
		}
		am, err := ctorch.Argmax(logits, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := am.ItemInt64()
		am.Free()
		logits.Free()
		if id != g.IDs()[i] {
			t.Fatalf("id %d: generated %d, decode + argmax %d", i, g.IDs()[i], id)
		}
		toks = []int64{id}
	}
	// A stop string.
	words := strings.Fields(text)
	if len(words) > 1 {
		out := collect(t, m.Chat(ctx, msgs, &Options{MaxTokens: n, Stop: []string{words[1]}}))
		if out != text[:strings.Index(text, words[1])] {
			t.Errorf("stop %q: %q of %q", words[1], out, text)
		}
	}
	// Seeded sampling repeats.
	o := &Options{MaxTokens: 16, SamplerOptions: SamplerOptions{Temperature: 0.9, TopK: 50, TopP: 0.95, Seed: 7}}
	if a, b := collect(t, m.Generate(ctx, "Once upon a time", o)), collect(t, m.Generate(ctx, "Once upon a time", o)); a != b {
		t.Errorf("same seed, different text: %q, %q", a, b)
	}
	// A cancelled context ends the range with its error.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pieces := 0
	var last error
	for _, err := range m.Generate(cctx, "Once upon a time", &Options{MaxTokens: 64}) {
		if err != nil {
			last = err
			break
		}
		pieces++
		cancel()
	}
	if !errors.Is(last, context.Canceled) || pieces != 1 {
		t.Errorf("after cancel: %d pieces, error %v", pieces, last)
	}
	// Bad input: the C API's error, naming the function.
	if _, err := m.Detokenize([]int64{1 << 40}, false); err == nil || !strings.Contains(err.Error(), "ctorch_lm_detokenize") {
		t.Errorf("an id outside the vocabulary: %v", err)
	}
}

// Weights reaches the C options: a GGUF file's matrices packed (the
// default) or dequantised, as the load report says.
func TestLoadWeights(t *testing.T) {
	m := loadOrSkip(t)
	defer m.Free()
	deq, err := Load(os.Getenv("CTORCH_LM_MODEL"), &LoadOptions{Weights: "dequantize"})
	if err != nil {
		t.Fatal(err)
	}
	defer deq.Free()
	packed := func(m *Model) bool {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		report, _ := info["report"].([]any)
		for _, r := range report {
			if s, _ := r.(string); strings.Contains(s, "kept packed") {
				return true
			}
		}
		return false
	}
	if !packed(m) || packed(deq) {
		t.Fatalf("load reports: default %v, weights=dequantize %v", packed(m), packed(deq))
	}
	// Activations too: the load report says what it did (int8, or float32 on a CPU without VNNI).
	i8, err := Load(os.Getenv("CTORCH_LM_MODEL"), &LoadOptions{Activations: "int8"})
	if err != nil {
		t.Fatal(err)
	}
	defer i8.Free()
	info, err := i8.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(info["report"]), "activations=int8") {
		t.Fatalf("activations=int8's load report: %v", info["report"])
	}
}
