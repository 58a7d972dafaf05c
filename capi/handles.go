//go:build cgo

package main

import (
	"fmt"
	"sync"
)

// kind is what kind of object a handle names. Every kind shares one
// handle space, so a function can tell a handle of another kind
// (TW_ERR_WRONG_KIND) from one that names nothing.
type kind uint8

const (
	kindClient  kind = 1 + iota // a transport client (client.go)
	kindCommits                 // a commits-mode client (commits.go)
)

func (k kind) String() string {
	switch k {
	case kindClient:
		return "client"
	case kindCommits:
		return "commits client"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// object is what a handle names.
type object interface {
	kind() kind
	// setErr records the message of the last failed call on the object,
	// for tw_last_error.
	setErr(msg string)
	lastErr() string
}

// handleTable maps handles to objects. Handles count up from 1 and are
// never reused (2^64 of them outlast any process), so a stale handle
// names nothing rather than another object.
type handleTable struct {
	mu   sync.RWMutex
	last uint64
	objs map[uint64]object
}

// handles is the process's handle table.
var handles = handleTable{objs: make(map[uint64]object)}

// add gives o a new handle.
func (t *handleTable) add(o object) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last++
	t.objs[t.last] = o
	return t.last
}

// get returns the object h names, or nil.
func (t *handleTable) get(h uint64) object {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.objs[h]
}

// remove takes h out of the table and returns what it named, or nil.
func (t *handleTable) remove(h uint64) object {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.objs[h]
	delete(t.objs, h)
	return o
}

// lookup returns the object h names if it is of kind k, else the code
// and (recorded for tw_last_error) the message of the failure.
func lookup(h uint64, k kind) (object, result) {
	o := handles.get(h)
	if o == nil {
		setErr(h, fmt.Sprintf("tickwire: handle %d names no object (never created, or freed)", h))
		return nil, resInvalidHandle
	}
	if o.kind() != k {
		o.setErr(fmt.Sprintf("tickwire: handle %d is a %v, not a %v", h, o.kind(), k))
		return nil, resWrongKind
	}
	return o, resOK
}

// globalErr is the message of the last failed call that named no live
// object (a create, an unknown handle): tw_last_error(0, ...).
var globalErr struct {
	mu  sync.Mutex
	msg string
}

// setErr records msg as the last error of the object h names, or as the
// process-wide one when h names none.
func setErr(h uint64, msg string) {
	if o := handles.get(h); o != nil {
		o.setErr(msg)
		return
	}
	globalErr.mu.Lock()
	globalErr.msg = msg
	globalErr.mu.Unlock()
}

// lastErr is the message tw_last_error returns for h.
func lastErr(h uint64) string {
	if o := handles.get(h); o != nil {
		return o.lastErr()
	}
	globalErr.mu.Lock()
	defer globalErr.mu.Unlock()
	return globalErr.msg
}
