package main

/*
#include "tickwire.h"

typedef const char tw_const_char;
typedef const void tw_const_void;
typedef const tw_client_config tw_const_client_config;
typedef const tw_commits_config tw_const_commits_config;
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/tickwire/tickwire/proto"
)

// The commits mode's exported functions (tickwire.h, "Commits mode"):
// they convert between C and Go and call commits.go.

//export tw_commits_create
func tw_commits_create(abi C.uint32_t, token *C.tw_const_char, addr *C.tw_const_char, cfg *C.tw_const_commits_config, out *C.tw_handle) (rc C.tw_result) {
	defer guard(0, &rc)
	const fn = "tw_commits_create"
	fail := func(r result, format string, args ...any) C.tw_result {
		setErr(0, fmt.Sprintf(format, args...))
		return C.tw_result(r)
	}
	if out == nil || cfg == nil {
		return fail(resInvalidArgument, "tickwire: %s: config and out must not be NULL", fn)
	}
	tok, server, r := createArgs(fn, abi, token, addr)
	if r != resOK {
		return C.tw_result(r)
	}
	if cfg.input_size < 1 || cfg.input_size > proto.MaxInputBytes/3 {
		return fail(resInvalidArgument, "tickwire: %s: input_size %d out of 1..%d", fn, cfg.input_size, proto.MaxInputBytes/3)
	}
	if cfg.capacity_ticks > 1<<16 {
		return fail(resInvalidArgument, "tickwire: %s: capacity_ticks %d over 65536", fn, cfg.capacity_ticks)
	}
	transport := (*C.tw_const_client_config)(unsafe.Pointer(&cfg.transport))
	k, err := newCommitsClient(tok, server, transportConfig(transport), rejoinOf(transport), int(cfg.input_size), int(cfg.capacity_ticks), cfg.mesh != 0)
	if err != nil {
		return fail(resInvalidArgument, "%v", err)
	}
	*out = C.tw_handle(k.handle)
	return C.TW_OK
}

// commitsOf returns the commits client h names, or the code of the
// failure.
func commitsOf(h C.tw_handle) (*commitsClient, C.tw_result) {
	o, r := lookup(uint64(h), kindCommits)
	if r != resOK {
		return nil, C.tw_result(r)
	}
	return o.(*commitsClient), C.TW_OK
}

//export tw_commits_update
func tw_commits_update(h C.tw_handle, now C.double) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	t, rc := finiteNow(k, "tw_commits_update", now)
	if rc == C.TW_OK {
		k.update(t)
	}
	return rc
}

//export tw_commits_poll
func tw_commits_poll(h C.tw_handle, ev *C.tw_event, buf unsafe.Pointer, capacity C.size_t) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	return pollEvent(k.client, h, "tw_commits_poll", ev, buf, capacity)
}

//export tw_commits_issue
func tw_commits_issue(h C.tw_handle, data *C.tw_const_void, size C.size_t, tick *C.uint32_t) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	if data == nil || uint64(size) != uint64(k.inputSize) {
		k.setErr(fmt.Sprintf("tickwire: tw_commits_issue: a command of %d bytes (data %p); the game's are %d", size, data, k.inputSize))
		return C.tw_result(resInvalidArgument)
	}
	at, r := k.issue(unsafe.Slice((*byte)(unsafe.Pointer(data)), int(size)))
	if r == resOK && tick != nil {
		*tick = C.uint32_t(at)
	}
	return C.tw_result(r)
}

//export tw_commits_sum
func tw_commits_sum(h C.tw_handle, tick C.uint32_t, sum C.uint64_t) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	k.report(uint32(tick), uint64(sum))
	return C.TW_OK
}

//export tw_commits_state
func tw_commits_state(h C.tw_handle, tick C.uint32_t, data *C.tw_const_void, size C.size_t) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	switch {
	case data == nil && size > 0:
		k.setErr(fmt.Sprintf("tickwire: tw_commits_state: data is NULL and size %d", size))
		return C.tw_result(resInvalidArgument)
	case uint64(size) > maxGameState:
		k.setErr(fmt.Sprintf("tickwire: tw_commits_state: a state of %d bytes (at most %d)", size, maxGameState))
		return C.tw_result(resMessageTooLarge)
	}
	var b []byte
	if size > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(data)), int(size))
	}
	k.answer(uint32(tick), b)
	return C.TW_OK
}

//export tw_commits_conn_state
func tw_commits_conn_state(h C.tw_handle) (rc C.int32_t) {
	defer func() {
		var r C.tw_result
		guard(h, &r)
		if r != 0 {
			rc = C.int32_t(r)
		}
	}()
	k, r := commitsOf(h)
	if k == nil {
		return C.int32_t(r)
	}
	return C.int32_t(k.currentState())
}

//export tw_commits_info
func tw_commits_info(h C.tw_handle, info *C.tw_commit_info) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	if info == nil {
		k.setErr("tickwire: tw_commits_info: info must not be NULL")
		return C.tw_result(resInvalidArgument)
	}
	*info = C.tw_commit_info{}
	if rc := acceptInfo(k.client, "tw_commits_info", &info.accept); rc != C.TW_OK {
		return rc
	}
	st := k.cc.Stats()
	info.committed = C.uint32_t(st.Committed)
	if k.stats().loads > 0 {
		info.has_state = 1
	}
	info.lead = C.uint32_t(max(st.Lead, 0))
	info.server_tick = C.double(k.cc.ServerTick(time.Now()))
	return C.TW_OK
}

//export tw_commits_stats
func tw_commits_stats(h C.tw_handle, stats *C.tw_commit_stats) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	if stats == nil {
		k.setErr("tickwire: tw_commits_stats: stats must not be NULL")
		return C.tw_result(resInvalidArgument)
	}
	st := k.stats()
	*stats = C.tw_commit_stats{
		issued:          C.uint64_t(st.Issued),
		commands:        C.uint64_t(st.commands),
		ticks:           C.uint64_t(st.ticks),
		sums_reported:   C.uint64_t(st.reported),
		sums_sent:       C.uint64_t(st.SumsSent),
		state_requests:  C.uint64_t(st.StateRequests),
		states_uploaded: C.uint64_t(st.StatesUploaded),
		states_loaded:   C.uint64_t(st.loads),
		kicks:           C.uint64_t(st.Kicks),
		desyncs:         C.uint64_t(st.Desyncs),
		stall_max_ms:    C.double(float64(st.StallMax) / float64(time.Millisecond)),
	}
	return C.TW_OK
}

//export tw_commits_transport_stats
func tw_commits_transport_stats(h C.tw_handle, stats *C.tw_stats) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	return transportStats(k.client, "tw_commits_transport_stats", stats)
}

//export tw_commits_close
func tw_commits_close(h C.tw_handle) (rc C.tw_result) {
	defer guard(h, &rc)
	k, rc := commitsOf(h)
	if k == nil {
		return rc
	}
	k.close()
	return C.TW_OK
}

//export tw_commits_free
func tw_commits_free(h C.tw_handle) (rc C.tw_result) {
	defer guard(h, &rc)
	if _, rc := commitsOf(h); rc != C.TW_OK {
		return rc
	}
	o, rc := removeHandle(h)
	if o == nil {
		return rc
	}
	o.(*commitsClient).free()
	return C.TW_OK
}
