package main

/*
#include <stdlib.h>
#include "tickwire.h"

// cgo writes the parameters of an exported function with the C names of
// their Go types, and Go has no const: these name the const-qualified
// types tickwire.h declares, so that the prototypes cgo generates are
// exactly tickwire.h's, which the C compiler checks (this preamble
// declares tickwire.h's functions before cgo's declarations).
typedef const char tw_const_char;
typedef const void tw_const_void;
typedef const tw_client_config tw_const_client_config;
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/tickwire/tickwire"
)

// Every exported function converts between C and Go and calls the Go
// side (client.go); guard turns a panic, which would kill the C
// process, into TW_ERR_INTERNAL.

// guard recovers a panic of an exported function as resInternal,
// recorded for tw_last_error on h.
func guard(h C.tw_handle, rc *C.tw_result) {
	if p := recover(); p != nil {
		setErr(uint64(h), fmt.Sprintf("tickwire: internal error: %v", p))
		*rc = C.tw_result(resInternal)
	}
}

//export tw_abi_version
func tw_abi_version() C.uint32_t { return abiVersion }

// cNames holds the static C strings of the *_string functions: at most
// one per name, never freed.
var cNames struct {
	mu sync.Mutex
	m  map[string]*C.tw_const_char
}

func staticCString(s string) *C.tw_const_char {
	cNames.mu.Lock()
	defer cNames.mu.Unlock()
	if p, ok := cNames.m[s]; ok {
		return p
	}
	if cNames.m == nil {
		cNames.m = make(map[string]*C.tw_const_char)
	}
	p := (*C.tw_const_char)(C.CString(s))
	cNames.m[s] = p
	return p
}

//export tw_result_string
func tw_result_string(code C.tw_result) *C.tw_const_char {
	return staticCString(result(code).String())
}

//export tw_disconnect_string
func tw_disconnect_string(reason C.uint32_t) *C.tw_const_char {
	return staticCString(disconnectName(uint32(reason)))
}

//export tw_deny_string
func tw_deny_string(reason C.uint32_t) *C.tw_const_char {
	return staticCString(denyName(uint32(reason)))
}

//export tw_last_error
func tw_last_error(h C.tw_handle, buf *C.char, capacity C.size_t) C.size_t {
	msg := lastErr(uint64(h))
	if buf != nil && capacity > 0 {
		n := min(uint64(len(msg)), uint64(capacity)-1)
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), n+1)
		copy(dst, msg[:n])
		dst[n] = 0
	}
	return C.size_t(len(msg))
}

//export tw_free
func tw_free(p unsafe.Pointer) { C.free(p) }

// goString reads a NUL-terminated C string of at most maxCString bytes
// (NUL included); ok is false when there is no NUL that early.
func goString(p *C.tw_const_char) (s string, ok bool) {
	b := unsafe.Pointer(p)
	for n := range maxCString {
		if *(*byte)(unsafe.Add(b, n)) == 0 {
			return string(unsafe.Slice((*byte)(b), n)), true
		}
	}
	return "", false
}

//export tw_client_create
func tw_client_create(abi C.uint32_t, token *C.tw_const_char, addr *C.tw_const_char, cfg *C.tw_const_client_config, out *C.tw_handle) (rc C.tw_result) {
	defer guard(0, &rc)
	if out == nil {
		setErr(0, "tickwire: tw_client_create: out must not be NULL")
		return C.tw_result(resInvalidArgument)
	}
	tok, server, r := createArgs("tw_client_create", abi, token, addr)
	if r != resOK {
		return C.tw_result(r)
	}
	*out = C.tw_handle(newClient(tok, server, transportConfig(cfg), rejoinOf(cfg)).handle)
	return C.TW_OK
}

// createArgs checks and reads a create function's version, token and
// address; a failure leaves the process-wide message.
func createArgs(fn string, abi C.uint32_t, token, addr *C.tw_const_char) (*tickwire.ConnectToken, string, result) {
	fail := func(r result, format string, args ...any) (*tickwire.ConnectToken, string, result) {
		setErr(0, fmt.Sprintf(format, args...))
		return nil, "", r
	}
	if abi != abiVersion {
		return fail(resABIVersion, "tickwire: the caller was compiled against ABI version %d, this library is version %d: build against this library's tickwire.h", abi, abiVersion)
	}
	if token == nil {
		return fail(resInvalidArgument, "tickwire: %s: token must not be NULL", fn)
	}
	tokText, ok := goString(token)
	if !ok {
		return fail(resInvalidArgument, "tickwire: %s: token has no NUL within %d bytes", fn, maxCString)
	}
	var server string
	if addr != nil {
		if server, ok = goString(addr); !ok {
			return fail(resInvalidArgument, "tickwire: %s: server_addr has no NUL within %d bytes", fn, maxCString)
		}
	}
	tok, err := tickwire.ParseConnectToken(tokText)
	if err != nil {
		return fail(resBadToken, "%v", err)
	}
	return tok, server, resOK
}

// transportConfig is a tw_client_config as a Config (NULL: the defaults).
func transportConfig(cfg *C.tw_const_client_config) tickwire.Config {
	var conf tickwire.Config
	if cfg != nil {
		ms := func(v C.uint32_t) time.Duration { return time.Duration(v) * time.Millisecond }
		conf.HandshakeTimeout = ms(cfg.handshake_timeout_ms)
		conf.Heartbeat = ms(cfg.heartbeat_ms)
		conf.Timeout = ms(cfg.timeout_ms)
		conf.ReliableFEC = cfg.reliable_fec != 0
	}
	return conf
}

// rejoinOf is a tw_client_config's rejoin setting (nil: none).
func rejoinOf(cfg *C.tw_const_client_config) *tickwire.Rejoin {
	if cfg == nil || cfg.rejoin == 0 {
		return nil
	}
	return &tickwire.Rejoin{Tries: int(cfg.rejoin_tries)}
}

// clientOf returns the client h names, or the code of the failure.
func clientOf(h C.tw_handle) (*client, C.tw_result) {
	o, r := lookup(uint64(h), kindClient)
	if r != resOK {
		return nil, C.tw_result(r)
	}
	return o.(*client), C.TW_OK
}

//export tw_client_update
func tw_client_update(h C.tw_handle, now C.double) (rc C.tw_result) {
	defer guard(h, &rc)
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	t, rc := finiteNow(c, "tw_client_update", now)
	if rc == C.TW_OK {
		c.update(t)
	}
	return rc
}

// finiteNow checks an update's now for o.
func finiteNow(o object, fn string, now C.double) (float64, C.tw_result) {
	t := float64(now)
	if math.IsNaN(t) || math.IsInf(t, 0) {
		o.setErr(fmt.Sprintf("tickwire: %s: now is %v, not a finite time", fn, t))
		return 0, C.tw_result(resInvalidArgument)
	}
	return t, C.TW_OK
}

//export tw_client_poll
func tw_client_poll(h C.tw_handle, ev *C.tw_event, buf unsafe.Pointer, capacity C.size_t) (rc C.tw_result) {
	defer guard(h, &rc)
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	return pollEvent(c, h, "tw_client_poll", ev, buf, capacity)
}

// pollEvent is tw_client_poll and tw_commits_poll on c, the client
// handle h names.
func pollEvent(c *client, h C.tw_handle, fn string, ev *C.tw_event, buf unsafe.Pointer, capacity C.size_t) C.tw_result {
	if ev == nil {
		c.setErr("tickwire: " + fn + ": event must not be NULL")
		return C.tw_result(resInvalidArgument)
	}
	*ev = C.tw_event{}
	return C.tw_result(c.poll(func(e *event) (result, string) {
		if e == nil {
			return resOK, "" // TW_EVENT_NONE
		}
		ev.kind = C.uint32_t(e.kind)
		ev.flags = C.uint32_t(e.flags)
		ev.handle = h
		ev.time = C.double(e.time)
		ev.delivery = C.uint32_t(e.delivery)
		ev.channel = C.uint32_t(e.channel)
		ev.tick = C.uint32_t(e.tick)
		ev.reason = C.uint32_t(e.reason)
		ev.detail = C.uint32_t(e.detail)
		ev.player = C.uint32_t(e.player)
		ev.seq = C.uint32_t(e.seq)
		ev.command = C.uint32_t(e.command)
		n := len(e.data)
		ev.size = C.uint64_t(n)
		if n == 0 {
			return resOK, ""
		}
		var dst unsafe.Pointer
		switch {
		case buf == nil:
			if dst = C.malloc(C.size_t(n)); dst == nil {
				return resNoMemory, fmt.Sprintf("tickwire: %s: cannot allocate %d bytes", fn, n)
			}
			ev.flags |= flagOwned
		case uint64(capacity) < uint64(n):
			return resBufferTooSmall, fmt.Sprintf("tickwire: %s: the event's data has %d bytes, the buffer %d", fn, n, capacity)
		default:
			dst = buf
		}
		copy(unsafe.Slice((*byte)(dst), n), e.data)
		ev.data = (*C.uint8_t)(dst)
		return resOK, ""
	}))
}

// maxSendSize bounds the size a send reads before the root package
// refuses it (TW_ERR_MESSAGE_TOO_LARGE): no message is near it.
const maxSendSize = 1 << 30

func clientSend(h C.tw_handle, delivery C.uint32_t, channel C.uint8_t, postmarked bool, tick C.uint32_t, data *C.tw_const_void, size C.size_t) C.tw_result {
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	switch {
	case delivery > C.TW_DELIVERY_RELIABLE:
		c.setErr(fmt.Sprintf("tickwire: delivery %d is none of TW_DELIVERY_*", delivery))
		return C.tw_result(resInvalidArgument)
	case data == nil && size > 0:
		c.setErr(fmt.Sprintf("tickwire: data is NULL and size %d", size))
		return C.tw_result(resInvalidArgument)
	case uint64(size) > maxSendSize:
		c.setErr(fmt.Sprintf("tickwire: a message of %d bytes", size))
		return C.tw_result(resMessageTooLarge)
	}
	var b []byte
	if size > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(data)), int(size))
	}
	return C.tw_result(c.send(tickwire.Delivery(delivery), uint8(channel), postmarked, uint32(tick), b))
}

//export tw_client_send
func tw_client_send(h C.tw_handle, delivery C.uint32_t, channel C.uint8_t, data *C.tw_const_void, size C.size_t) (rc C.tw_result) {
	defer guard(h, &rc)
	return clientSend(h, delivery, channel, false, 0, data, size)
}

//export tw_client_send_at
func tw_client_send_at(h C.tw_handle, delivery C.uint32_t, channel C.uint8_t, tick C.uint32_t, data *C.tw_const_void, size C.size_t) (rc C.tw_result) {
	defer guard(h, &rc)
	return clientSend(h, delivery, channel, true, tick, data, size)
}

//export tw_client_flush
func tw_client_flush(h C.tw_handle) (rc C.tw_result) {
	defer guard(h, &rc)
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	return C.tw_result(c.flush())
}

//export tw_client_state
func tw_client_state(h C.tw_handle) (rc C.int32_t) {
	defer func() {
		var r C.tw_result
		guard(h, &r)
		if r != 0 {
			rc = C.int32_t(r)
		}
	}()
	c, r := clientOf(h)
	if c == nil {
		return C.int32_t(r)
	}
	return C.int32_t(c.currentState())
}

//export tw_client_info
func tw_client_info(h C.tw_handle, info *C.tw_accept_info) (rc C.tw_result) {
	defer guard(h, &rc)
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	return acceptInfo(c, "tw_client_info", info)
}

// acceptInfo fills info from c's accept.
func acceptInfo(c *client, fn string, info *C.tw_accept_info) C.tw_result {
	if info == nil {
		c.setErr("tickwire: " + fn + ": info must not be NULL")
		return C.tw_result(resInvalidArgument)
	}
	tc, r := c.accepted()
	if r != resOK {
		return C.tw_result(r)
	}
	*info = C.tw_accept_info{
		conn_id:   C.uint32_t(tc.ConnID()),
		tick_rate: C.uint32_t(tc.TickRate()),
		client_id: C.uint64_t(tc.ClientID()),
		game_id:   C.uint64_t(c.token.GameID),
	}
	players := tc.Players()
	info.player_count = C.uint32_t(len(players))
	for i, p := range players[:min(len(players), len(info.players))] {
		info.players[i] = C.uint16_t(p)
	}
	return C.TW_OK
}

//export tw_client_stats
func tw_client_stats(h C.tw_handle, stats *C.tw_stats) (rc C.tw_result) {
	defer guard(h, &rc)
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	return transportStats(c, "tw_client_stats", stats)
}

// transportStats fills stats with c's connection's.
func transportStats(c *client, fn string, stats *C.tw_stats) C.tw_result {
	if stats == nil {
		c.setErr("tickwire: " + fn + ": stats must not be NULL")
		return C.tw_result(resInvalidArgument)
	}
	tc, r := c.accepted()
	if r != resOK {
		return C.tw_result(r)
	}
	st := tc.Stats()
	dropped := c.in.droppedCount()
	ms := func(d time.Duration) C.double { return C.double(float64(d) / float64(time.Millisecond)) }
	*stats = C.tw_stats{
		rtt_ms:           ms(st.RTT),
		jitter_ms:        ms(st.Jitter),
		loss:             C.double(st.Loss),
		packets_in:       C.uint64_t(st.PacketsIn),
		packets_out:      C.uint64_t(st.PacketsOut),
		bytes_in:         C.uint64_t(st.BytesIn),
		bytes_out:        C.uint64_t(st.BytesOut),
		messages_in:      C.uint64_t(st.MessagesIn),
		messages_out:     C.uint64_t(st.MessagesOut),
		messages_dropped: C.uint64_t(st.MessagesDropped + dropped),
		reliable_queue:   C.uint64_t(st.ReliableQueue),
	}
	return C.TW_OK
}

//export tw_client_close
func tw_client_close(h C.tw_handle) (rc C.tw_result) {
	defer guard(h, &rc)
	c, rc := clientOf(h)
	if c == nil {
		return rc
	}
	c.close()
	return C.TW_OK
}

//export tw_client_free
func tw_client_free(h C.tw_handle) (rc C.tw_result) {
	defer guard(h, &rc)
	if _, rc := clientOf(h); rc != C.TW_OK {
		return rc
	}
	o, rc := removeHandle(h)
	if o == nil {
		return rc
	}
	o.(*client).free()
	return C.TW_OK
}

// removeHandle takes h out of the handle table and returns its object,
// or an error when another thread freed it since the caller looked it up.
func removeHandle(h C.tw_handle) (any, C.tw_result) {
	o := handles.remove(uint64(h))
	if o == nil {
		setErr(0, fmt.Sprintf("tickwire: handle %d names no object (never created, or freed)", h))
		return nil, C.tw_result(resInvalidHandle)
	}
	return o, C.TW_OK
}
