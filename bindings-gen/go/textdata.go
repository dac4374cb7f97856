package ctorch

import "os"

// TextData is a text as a character-level data set (tch's and gotch's
// TextData): Data is a 1-dim int64 tensor with each byte's label, the labels
// numbered in the order the bytes first appear; Vocab[label] is the byte.
// Free it with Free.
type TextData struct {
	Data  *Tensor
	Vocab []byte
}

// NewTextData reads the file at path as a TextData (status IO when it cannot).
func NewTextData(path string) (*TextData, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Status: StatusIo, Message: "NewTextData: " + err.Error()}
	}
	return TextDataFromBytes(b)
}

// TextDataFromBytes is the TextData of text.
func TextDataFromBytes(text []byte) (*TextData, error) {
	var label [256]int64 // a byte's label + 1; 0: not seen yet
	var vocab []byte
	ids := make([]int64, len(text))
	for i, c := range text {
		if label[c] == 0 {
			vocab = append(vocab, c)
			label[c] = int64(len(vocab))
		}
		ids[i] = label[c] - 1
	}
	data, err := FromInt64(ids)
	if err != nil {
		return nil, err
	}
	return &TextData{Data: data, Vocab: vocab}, nil
}

// Labels is the number of distinct bytes.
func (d *TextData) Labels() int64 {
	if d == nil {
		return 0
	}
	return int64(len(d.Vocab))
}

// Loader gives the windows of seqLen consecutive labels at every start
// position, shuffled by seed (each epoch reshuffled), in batches of
// batchSize rows, the last partial batch dropped: tch's iter_shuffle. A
// batch's first seqLen-1 columns are a model's input, its last seqLen-1 the
// targets.
func (d *TextData) Loader(seqLen, batchSize int64, seed uint64) (*DataLoader, error) {
	var data *Tensor
	if d != nil {
		data = d.Data
	}
	w, err := Unfold(data, 0, seqLen, 1)
	if err != nil {
		return nil, err
	}
	defer w.Free()
	return DataLoaderNew(w, nil, batchSize, true, seed, true)
}

// Free frees Data; safe on nil and twice.
func (d *TextData) Free() {
	if d != nil {
		d.Data.Free()
	}
}
