//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"syscall/js"
	"time"

	"github.com/tickwire/tickwire/webclient"
)

// dialTimeout bounds the handshake.
const dialTimeout = 20 * time.Second

func main() {
	js.Global().Set("tickwireConnect", js.FuncOf(connect))
	select {} // the page calls in from now on
}

// connect is tickwireConnect(token, send): it returns the session
// object at once (the page pushes the handshake's packets into it) with
// a promise, ready, that resolves when the player is in the game.
func connect(_ js.Value, args []js.Value) any {
	if len(args) != 2 || args[0].Type() != js.TypeString || args[1].Type() != js.TypeFunction {
		panic("tickwireConnect(token, send)")
	}
	token, send := args[0].String(), args[1]
	u8 := js.Global().Get("Uint8Array")
	pipe := webclient.NewPipe(func(b []byte) {
		a := u8.New(len(b))
		js.CopyBytesToJS(a, b)
		send.Invoke(a)
	})
	session := sessionObject(pipe)
	var resolve, reject js.Value
	session.Set("ready", js.Global().Get("Promise").New(js.FuncOf(func(_ js.Value, a []js.Value) any {
		resolve, reject = a[0], a[1]
		return nil
	})))
	// The handshake waits for packets the page pushes: it cannot run in
	// this call, which holds the page's event loop.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		defer cancel()
		p, err := webclient.Dial(ctx, token, pipe)
		if err != nil {
			pipe.Close()
			reject.Invoke(err.Error())
			return
		}
		bindPlayer(session, p)
		resolve.Invoke(session)
	}()
	return session
}

// sessionObject is the session's JavaScript face; push works from the
// start (the handshake needs it), the rest once the player is bound.
func sessionObject(pipe *webclient.Pipe) js.Value {
	s := js.Global().Get("Object").New()
	s.Set("push", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) == 1 {
			b := make([]byte, a[0].Get("byteLength").Int())
			js.CopyBytesToGo(b, a[0])
			pipe.Push(b)
		}
		return nil
	}))
	return s
}

// bindPlayer adds the player's methods to the session object.
func bindPlayer(s js.Value, p *webclient.Player) {
	s.Set("slot", int(p.Slot()))
	s.Set("input", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) == 4 {
			p.SetInput(int8(clamp(a[0].Int())), int8(clamp(a[1].Int())), a[2].Float(), uint8(a[3].Int()))
		}
		return nil
	}))
	s.Set("frame", js.FuncOf(func(js.Value, []js.Value) any {
		b, err := json.Marshal(p.Frame(time.Now()))
		if err != nil {
			return "{}"
		}
		return string(b)
	}))
	s.Set("close", js.FuncOf(func(js.Value, []js.Value) any {
		go p.Close()
		return nil
	}))
}

func clamp(v int) int { return max(-127, min(v, 127)) }
