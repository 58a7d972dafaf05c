package proto

// EffectFrame is a presentation event the server's game produced in a
// step (a tag, an explosion, a score), sent to the players concerned on
// the reliable channel (game.Config.SendEffects): the client delivers it
// as a game event in tick order. Kind, Player, Entity and Data are the
// game's (sim.Effect).
type EffectFrame struct {
	Tick   uint32
	Kind   uint16
	Player uint16
	Entity NetworkID
	Data   [4]int32
}

const effectFrameSize = 1 + 4 + 2 + 2 + 4 + 16

func (f *EffectFrame) Len() int { return effectFrameSize }

func (f *EffectFrame) Append(b []byte) ([]byte, error) {
	b = append(b, byte(FrameEffect))
	b = le.AppendUint32(b, f.Tick)
	b = le.AppendUint16(b, f.Kind)
	b = le.AppendUint16(b, f.Player)
	b = le.AppendUint32(b, uint32(f.Entity))
	for _, d := range f.Data {
		b = le.AppendUint32(b, uint32(d))
	}
	return b, nil
}

var (
	errEffectTrunc = truncated("effect frame", "")
	errEffectType  = malformed("effect frame", "type")
)

func ParseEffectFrame(b []byte) (EffectFrame, int, error) {
	r := reader{b: b}
	if !r.frameType(FrameEffect) {
		return EffectFrame{}, 0, errEffectType
	}
	f := EffectFrame{Tick: r.u32(), Kind: r.u16(), Player: r.u16(), Entity: NetworkID(r.u32())}
	for i := range f.Data {
		f.Data[i] = int32(r.u32())
	}
	if err := r.check(errEffectTrunc, errEffectTrunc); err != nil {
		return EffectFrame{}, 0, err
	}
	return f, r.off, nil
}
