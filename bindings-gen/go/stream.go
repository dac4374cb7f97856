package ctorch

// torch.save bytes, TorchScript modules and NumPy files through io.Reader /
// io.Writer (services load models from object stores, not paths), and the
// printing options of Tensor.String (Python's str(tensor):
// ctorch_tensor_format). The bytes are the file forms' own (the generated
// SaveToBuffer / LoadFromBuffer, ...).

import (
	"errors"
	"io"
	"sync"
)

// WriteTensor writes t as torch.save(t, w) does.
func WriteTensor(w io.Writer, t *Tensor) error { return writeAll(w, func() ([]byte, error) { return SaveToBuffer(t) }) }

// ReadTensor reads r to its end and loads the one tensor torch.save wrote there.
func ReadTensor(r io.Reader) (*Tensor, error) {
	b, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return LoadFromBuffer(b)
}

// WriteDict writes d as torch.save(OrderedDict, w) does (a state dict).
func WriteDict(w io.Writer, d *TensorDict) error { return writeAll(w, d.SaveToBuffer) }

// ReadDict reads r to its end and loads the dict of tensors torch.save wrote there.
func ReadDict(r io.Reader) (*TensorDict, error) {
	b, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return LoadDictFromBuffer(b)
}

// WriteNpy writes t as numpy.save(w, t) does (the same bytes).
func WriteNpy(w io.Writer, t *Tensor) error { return writeAll(w, func() ([]byte, error) { return NpySaveToBuffer(t) }) }

// ReadNpy reads a .npy array from r (to its end).
func ReadNpy(r io.Reader) (*Tensor, error) {
	b, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return NpyLoadFromBuffer(b)
}

// WriteNpz writes d as numpy.savez(w, **d) does (a stored zip of numpy.save members).
func WriteNpz(w io.Writer, d *TensorDict) error { return writeAll(w, func() ([]byte, error) { return NpzSaveToBuffer(d) }) }

// ReadNpz reads a .npz archive from r (numpy.savez or savez_compressed).
func ReadNpz(r io.Reader) (*TensorDict, error) {
	b, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return NpzLoadFromBuffer(b)
}

// WriteModule writes the TorchScript module m as torch.jit.save(m, w) does
// (ctorch_module_save's bytes; torch.jit.load reads them).
func WriteModule(w io.Writer, m *Module) error { return writeAll(w, m.SaveToBuffer) }

// ReadModule reads r to its end and loads the TorchScript module
// torch.jit.save wrote there, with every check ModuleLoadEx makes before
// any of its code runs. mapLocation: nil for the saved devices; flags: 0
// for bytes from strangers, else an OR of the CTORCH_MODULE_LOAD_ALLOW_*
// bits (ModuleLoadFromBuffer).
func ReadModule(r io.Reader, mapLocation *Device, flags uint32) (*Module, error) {
	b, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return ModuleLoadFromBuffer(b, mapLocation, flags)
}

var errNilStream = errors.New("ctorch: a nil io.Reader or io.Writer")

func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errNilStream
	}
	return io.ReadAll(r)
}

func writeAll(w io.Writer, bytes func() ([]byte, error)) error {
	if w == nil {
		return errNilStream
	}
	b, err := bytes()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// PrintOptions are torch.set_printoptions' fields for Tensor.String; a
// negative value takes PyTorch's default (precision 4, threshold 1000,
// edgeitems 3, linewidth 80). SciMode: -1 automatic, 0 off, 1 on.
type PrintOptions struct {
	Precision, Threshold, EdgeItems, LineWidth int64
	SciMode                                    int
}

var (
	printMu   sync.RWMutex
	printOpts = PrintOptions{-1, -1, -1, -1, -1}
)

// SetPrintOptions sets how Tensor.String prints (safe from any goroutine).
func SetPrintOptions(o PrintOptions) {
	printMu.Lock()
	printOpts = o
	printMu.Unlock()
}

func currentPrintOptions() PrintOptions {
	printMu.RLock()
	defer printMu.RUnlock()
	return printOpts
}
