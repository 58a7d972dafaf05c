package deltacomp

import "errors"

// MaxPredictAge bounds the revision spans a prediction extrapolates over
// and from: the ring's largest window (RingConfig.Size).
const MaxPredictAge = 4096

// Predictor extrapolates an entity's record from two records of it that
// both ends hold: its baseline, and an older record, both acknowledged by
// the client. Codec-5 delta frames XOR a moving entity's record with that
// prediction instead of with the baseline itself, so a patch carries how
// far the entity strayed from its course rather than how far it went.
//
// The prediction is integer arithmetic on the fields of the record's
// Schema, the same on every platform: the encoder and every client must
// compute it bit for bit alike, so configure the server's Ring and the
// clients' Replicas with predictors of the same schema and fields (like
// the record size, it is part of the game's definition). A field named
// linear moves on at the pace it moved between the two records; every
// other field, and every byte of the record outside the schema's fields,
// is predicted to keep its baseline value.
//
// A Predictor is immutable and safe for concurrent use.
type Predictor struct {
	schema *Schema
	linear []int // indices of the extrapolated fields
}

var (
	errPredictField = errors.New("deltacomp: predictor: no such field in the schema")
	errPredictTwice = errors.New("deltacomp: predictor: field name not unique in the schema")
)

// NewPredictor returns a predictor for records laid out by s that
// extrapolates the fields named linear. Fields stored through Bias
// (signed positions, velocities) extrapolate like the signed values.
func NewPredictor(s *Schema, linear ...string) (*Predictor, error) {
	p := &Predictor{schema: s}
	for _, name := range linear {
		found := -1
		for i, f := range s.fields {
			if f.Name != name {
				continue
			}
			if found >= 0 {
				return nil, errPredictTwice
			}
			found = i
		}
		if found < 0 {
			return nil, errPredictField
		}
		p.linear = append(p.linear, found)
	}
	return p, nil
}

// RecordSize is the size of the records the predictor's schema lays out.
func (p *Predictor) RecordSize() int { return p.schema.Size() }

// Predict writes into dst the record predicted for the revision ahead
// revisions after base's, where base is the entity's record at its
// baseline and prev its record step revisions before that. Each linear
// field f becomes
//
//	base.f + round((base.f − prev.f) × ahead / step)
//
// rounded to the nearest integer, halves away from zero, and clamped to
// the field's range (0 to 2^Bits − 1); all else is copied from base. With
// ahead or step 0 the prediction is base itself; spans above
// MaxPredictAge count as MaxPredictAge. dst may be base but must not
// overlap prev; all three are RecordSize bytes.
func (p *Predictor) Predict(dst, base, prev []byte, ahead, step uint32) {
	s := p.schema
	copy(dst[:s.size], base[:s.size])
	if ahead == 0 || step == 0 {
		return
	}
	a, st := int64(min(ahead, MaxPredictAge)), int64(min(step, MaxPredictAge))
	for _, f := range p.linear {
		// dst still holds base's value of f: Set changes only f.
		vb, vp := int64(s.Get(dst, f)), int64(s.Get(prev, f))
		d := (vb - vp) * a
		if st != 1 {
			d = divRound(d, st)
		}
		s.Set(dst, f, uint32(min(max(vb+d, 0), int64(s.at[f].mask))))
	}
}

// divRound is n/d (d > 0) rounded to the nearest integer, halves away
// from zero.
func divRound(n, d int64) int64 {
	if n < 0 {
		return -((-n*2 + d) / (2 * d))
	}
	return (n*2 + d) / (2 * d)
}
