// A character-level language model: examples/char_lstm.c in Go, every error
// handled (Must/Catch, Scope). Embedding(V, 32) -> LSTM(32, H, 2 layers,
// batch_first) -> Linear(H, V), Adam(lr 3e-3), gradients clipped to norm 1,
// truncated backpropagation through time over -batch streams of the text.
// From the same seed it prints what the C program prints and saves the same
// weights, bit for bit (tests/bindings/char_lstm_twin.py).
//
//	char_lstm [-text PATH] [-steps K] [-batch B] [-seq T] [-hidden H] [-seed S]
//	          [-threads N] [-sample N] [-save PATH]
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"slices"
	"time"

	ct "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

var (
	text    = flag.String("text", "/usr/share/common-licenses/GPL-3", "the text to learn")
	steps   = flag.Int("steps", 200, "training steps")
	batch   = flag.Int64("batch", 32, "streams the training text is cut into")
	seq     = flag.Int64("seq", 32, "characters per window")
	hidden  = flag.Int64("hidden", 128, "the LSTM's hidden size")
	seed    = flag.Uint64("seed", 1, "seed of the weights and of the sampling")
	threads = flag.Int("threads", 0, "intra-op threads (0: libtorch's default)")
	nSample = flag.Int("sample", 200, "characters to sample")
	save    = flag.String("save", "", "where to write the trained weights ('': nowhere)")
)

// state is the LSTM's (h, c) carried from one window to the next; nil: zeros.
type state [2]*ct.Tensor

func (st *state) set(h, c *ct.Tensor) { st[0].Free(); st[1].Free(); *st = state{h, c} }

// charLSTM is char_lstm.py's CharLSTM: its children made in its order (the
// order of the random draws), held by net under its names (the state-dict keys).
type charLSTM struct {
	net, embed, lstm, head *nn.Module
	v                      int64
}

func newCharLSTM(v, hidden int64) *charLSTM {
	m := &charLSTM{net: ct.Must(nn.NewCustom("CharLSTM", nil)), v: v}
	m.embed = ct.Must(m.net.RegisterModule("embed", ct.Must(nn.NewEmbedding(v, 32, nil))))
	lstm := &nn.LSTMOptions{NumLayers: ct.Ptr[int64](2), BatchFirst: ct.Ptr(true)}
	m.lstm = ct.Must(m.net.RegisterModule("lstm", ct.Must(nn.NewLSTM(32, hidden, lstm))))
	m.head = ct.Must(m.net.RegisterModule("head", ct.Must(nn.NewLinear(hidden, v, nil))))
	return m
}

func (m *charLSTM) Free() { m.net.Free(); m.embed.Free(); m.lstm.Free(); m.head.Free() }

// forward: x [B, T] ids -> logits [B, T, V] and the new (h, c), all recorded in s.
func (m *charLSTM) forward(s *ct.Scope, x *ct.Tensor, st state) (logits, h, c *ct.Tensor) {
	out := s.Ts(m.lstm.ForwardN([]*ct.Tensor{s.T(m.embed.Forward(x)), st[0], st[1]}, ""))
	if len(out) != 3 { // ForwardN failed (its error), or not an LSTM's outputs
		ct.Must0(cmp.Or(s.Err(), errors.New("char_lstm: the LSTM did not return (output, h, c)")))
	}
	return s.T(m.head.Forward(out[0])), out[1], out[2]
}

// windowLoss is the mean cross-entropy of predicting ids[:, start+1 ..= start+n]
// from ids[:, start .. start+n), from the state st, which becomes the new one
// detached (truncated backpropagation through time).
func (m *charLSTM) windowLoss(s *ct.Scope, ids *ct.Tensor, start, n int64, st *state) *ct.Tensor {
	logits, h, c := m.forward(s, s.T(ct.Narrow(ids, 1, start, n)), *st)
	st.set(ct.Must(h.Detach()), ct.Must(c.Detach()))
	y := s.T(ct.Reshape(s.T(ct.Narrow(ids, 1, start+1, n)), []int64{-1}))
	return s.T(ct.CrossEntropyLossOpts(s.T(ct.Reshape(logits, []int64{-1, m.v})), y, nil))
}

// evaluate is the mean loss over the held-out streams, one window of seq after another.
func (m *charLSTM) evaluate(ids *ct.Tensor, seq int64) float64 {
	cols, sum, count := ct.Must(ids.Sizes())[1], 0.0, int64(0)
	var st state
	defer st.set(nil, nil)
	ct.Must0(m.net.Eval())
	ct.Must0(ct.InferenceMode(func() error {
		for start := int64(0); start+1 < cols; start += seq {
			var s ct.Scope
			n := min(seq, cols-1-start)
			sum, count = sum+ct.Must(m.windowLoss(&s, ids, start, n, &st).ItemDouble())*float64(n), count+n
			ct.Must0(s.Free())
		}
		return nil
	}))
	ct.Must0(m.net.Train())
	return sum / float64(count)
}

// sample feeds prompt, then draws n characters from the softmax of the logits
// (torch.multinomial with a generator seeded with seed).
func (m *charLSTM) sample(vocab []byte, prompt string, n int, seed uint64) []byte {
	g := ct.Must(ct.GeneratorNew(ct.DeviceCpu(), seed))
	defer g.Free()
	var ids []int64
	for _, b := range []byte(prompt) {
		if i, ok := slices.BinarySearch(vocab, b); ok {
			ids = append(ids, int64(i))
		}
	}
	var st state
	defer st.set(nil, nil)
	text := make([]byte, 0, n)
	ct.Must0(ct.InferenceMode(func() error {
		for range n {
			var s ct.Scope
			logits, h, c := m.forward(&s, s.T(ct.FromInt64(ids, 1, int64(len(ids)))), st)
			probs := s.T(ct.Softmax_int(s.T(ct.Select_int(logits, 1, -1)), -1, nil))
			id := ct.Must(s.T(ct.Multinomial(probs, 1, false, g)).ItemInt64())
			st.set(s.Keep(h), s.Keep(c))
			ids, text = []int64{id}, append(text, vocab[id])
			ct.Must0(s.Free())
		}
		return nil
	}))
	return text
}

func run() (err error) {
	defer ct.Catch(&err)
	data, rerr := os.ReadFile(*text)
	if rerr != nil || len(data) == 0 {
		fmt.Fprintf(os.Stderr, "char_lstm: cannot read %s: skipped\n", *text)
		os.Exit(77)
	}
	// The text as codes 0..V-1 of its distinct bytes in sorted order (sorted(set(data))).
	vocab := slices.Compact(slices.Sorted(slices.Values(data)))
	ids := make([]int64, len(data))
	for i, b := range data {
		j, _ := slices.BinarySearch(vocab, b)
		ids[i] = int64(j)
	}
	n, nTrain := int64(len(ids)), int64(len(ids))*9/10
	if *steps < 1 || *batch < 1 || *seq < 1 || *hidden < 1 || nTrain / *batch < *seq+1 || (n-nTrain)/8 < 2 {
		fmt.Fprintln(os.Stderr, "char_lstm: --steps, --batch, --seq and --hidden must be >= 1, "+
			"and the text long enough for them")
		os.Exit(2)
	}
	if *threads > 0 {
		ct.Must0(ct.SetNumThreads(*threads))
	}
	// ids[start .. start+len) as `streams` rows of consecutive pieces (char_lstm.py's batchify).
	batchify := func(start, len, streams int64) *ct.Tensor {
		return ct.Must(ct.FromInt64(ids[start:start+len/streams*streams], streams, len/streams))
	}
	train, val := batchify(0, nTrain, *batch), batchify(nTrain, n-nTrain, 8)
	defer train.Free()
	defer val.Free()
	windows := (nTrain / *batch - 1) / *seq // full windows per pass over the streams

	ct.Must0(ct.ManualSeed(*seed))
	m := newCharLSTM(int64(len(vocab)), *hidden)
	defer m.Free()
	opt := ct.Must(m.net.NewOptimizer(ct.OptimizerKindAdam, &ct.OptimizerOptions{Lr: 3e-3}))
	defer opt.Free()
	fmt.Printf("char-LSTM (hidden %d) on %s (%d characters, %d distinct), %d steps, batch %d x %d, "+
		"%d thread(s), seed %d\n", *hidden, *text, n, len(vocab), *steps, *batch, *seq, ct.Must(ct.GetNumThreads()), *seed)
	var st state
	defer st.set(nil, nil)
	t0, first, last := time.Now(), 0.0, 0.0
	for step := range *steps {
		var s ct.Scope
		w := int64(step) % windows
		if w == 0 {
			st.set(nil, nil) // the streams start over: so does the state
		}
		ct.Must0(opt.ZeroGrad(true))
		loss := m.windowLoss(&s, train, w**seq, *seq, &st)
		ct.Must0(loss.Backward(nil, false, false, nil))
		ct.Must(m.net.ClipGradNorm(1, 2, false))
		ct.Must0(opt.Step())
		if last = ct.Must(loss.ItemDouble()); step == 0 {
			first = last
		}
		if step == 0 || (step+1)%50 == 0 || step+1 == *steps {
			fmt.Printf("step %d/%d loss %.6f ppl %.3f\n", step+1, *steps, last, math.Exp(last))
		}
		ct.Must0(s.Free())
	}
	dt := time.Since(t0).Seconds()
	valLoss := m.evaluate(val, *seq)
	fmt.Printf("held-out loss %.6f perplexity %.4f (uniform: %d)\n", valLoss, math.Exp(valLoss), len(vocab))
	ct.Must(os.Stdout.Write(slices.Concat([]byte("sample: The "), m.sample(vocab, "The ", *nSample, *seed), []byte("\n"))))
	if *save != "" {
		ct.Must0(m.net.Save(*save))
		fmt.Printf("saved weights to %s\n", *save)
	}
	fmt.Printf("initial_loss=%.6f final_loss=%.6f val_loss=%.6f val_ppl=%.4f chars_per_s=%.1f\n", first, last, valLoss,
		math.Exp(valLoss), float64(int64(*steps)**batch**seq)/dt)
	return nil
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		log.Fatal("char_lstm: ", err)
	}
}
