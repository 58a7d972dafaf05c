//go:build cgo

package main

/*
#include <pthread.h>
#include <stdint.h>
#include "tickwire.h"

// Loops of ABI calls, for the benchmarks (bench_test.go): C calling the
// library n times, as a game does, on a thread C created (twb_run), so
// that a benchmark measures calls from a game's thread: not calls from
// Go into C, nor calls back from C that Go called, which cost about
// twice as much. They are static and no exported function calls them:
// they cost the library nothing.

static uint64_t twb_version(int64_t n) {
	uint64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += tw_abi_version();
	return sum;
}

static tw_result twb_stats(tw_handle h, int64_t n) {
	tw_stats st;
	for (int64_t i = 0; i < n; i++) {
		tw_result rc = tw_client_stats(h, &st);
		if (rc != TW_OK)
			return rc;
	}
	return TW_OK;
}

// A frame with nothing to read: update, then one poll that finds none.
static tw_result twb_idle(tw_handle h, int64_t n) {
	tw_event ev;
	uint8_t buf[64];
	for (int64_t i = 0; i < n; i++) {
		tw_result rc = tw_client_update(h, (double)i);
		if (rc == TW_OK)
			rc = tw_client_poll(h, &ev, buf, sizeof buf);
		if (rc != TW_OK)
			return rc;
	}
	return TW_OK;
}

// A round: send 16 bytes unreliably, flush them to the socket, update,
// poll until none.
static tw_result twb_round(tw_handle h, int64_t n) {
	tw_event ev;
	uint8_t buf[64], msg[16] = {0};
	for (int64_t i = 0; i < n; i++) {
		tw_result rc = tw_client_send(h, TW_DELIVERY_UNRELIABLE, 1, msg, sizeof msg);
		if (rc == TW_OK)
			rc = tw_client_flush(h);
		if (rc == TW_OK)
			rc = tw_client_update(h, (double)i);
		while (rc == TW_OK) {
			rc = tw_client_poll(h, &ev, buf, sizeof buf);
			if (ev.kind == TW_EVENT_NONE)
				break;
		}
		if (rc != TW_OK)
			return rc;
	}
	return TW_OK;
}

// Commits mode: issue one command of 8 bytes.
static tw_result twb_issue(tw_handle h, int64_t n) {
	uint8_t cmd[8] = {1};
	uint32_t tick;
	for (int64_t i = 0; i < n; i++) {
		tw_result rc = tw_commits_issue(h, cmd, sizeof cmd, &tick);
		if (rc != TW_OK)
			return rc;
	}
	return TW_OK;
}

// Commits mode: n committed ticks of one command each, made up and
// queued before (ticks from 2^31 on): update, then poll until none (the
// commands' bytes into a buffer, a checksum reported for each tick),
// again until n such ticks were taken.
static tw_result twb_tick(tw_handle h, int64_t n) {
	tw_event ev;
	uint8_t buf[64];
	uint64_t sum = 0;
	int64_t taken = 0;
	for (double now = 0; taken < n; now++) {
		tw_result rc = tw_commits_update(h, now);
		while (rc == TW_OK) {
			rc = tw_commits_poll(h, &ev, buf, sizeof buf);
			if (rc != TW_OK || ev.kind == TW_EVENT_NONE)
				break;
			if (ev.kind == TW_EVENT_COMMITS_COMMAND)
				sum = sum * 31 + buf[0];
			else if (ev.kind == TW_EVENT_COMMITS_TICK && ev.tick >= 1u << 31) {
				rc = tw_commits_sum(h, ev.tick, sum);
				taken++;
			}
		}
		if (rc != TW_OK)
			return rc;
	}
	return TW_OK;
}

enum { TWB_VERSION, TWB_STATS, TWB_IDLE, TWB_ROUND, TWB_ISSUE, TWB_TICK };

struct twb_job {
	int loop;
	tw_handle h;
	int64_t n;
	int64_t rc; // the loop's tw_result, or twb_version's sum
};

static void *twb_thread(void *arg) {
	struct twb_job *j = arg;
	switch (j->loop) {
	case TWB_VERSION: j->rc = (int64_t)twb_version(j->n); break;
	case TWB_STATS: j->rc = twb_stats(j->h, j->n); break;
	case TWB_IDLE: j->rc = twb_idle(j->h, j->n); break;
	case TWB_ROUND: j->rc = twb_round(j->h, j->n); break;
	case TWB_ISSUE: j->rc = twb_issue(j->h, j->n); break;
	case TWB_TICK: j->rc = twb_tick(j->h, j->n); break;
	}
	return NULL;
}

// twb_run runs one loop on a new thread and waits for it; -1000 when the
// thread could not start.
static int64_t twb_run(int loop, tw_handle h, int64_t n) {
	struct twb_job j = {loop, h, n, -1000};
	pthread_t t;
	if (pthread_create(&t, NULL, twb_thread, &j) != 0)
		return -1000;
	pthread_join(t, NULL);
	return j.rc;
}
*/
import "C"

// benchLoop names a loop of ABI calls in C.
type benchLoop int

const (
	loopVersion benchLoop = C.TWB_VERSION // tw_abi_version; returns the sum
	loopStats   benchLoop = C.TWB_STATS   // tw_client_stats
	loopIdle    benchLoop = C.TWB_IDLE    // update, one poll finding nothing
	loopRound   benchLoop = C.TWB_ROUND   // send, flush, update, poll until none
	loopIssue   benchLoop = C.TWB_ISSUE   // tw_commits_issue of 8 bytes
	loopTick    benchLoop = C.TWB_TICK    // poll queued ticks' command and tick, tw_commits_sum
)

// benchCalls runs loop n times on client h, on a thread C created, and
// returns what the loop returned (a tw_result but for loopVersion).
func benchCalls(loop benchLoop, h uint64, n int) int64 {
	return int64(C.twb_run(C.int(loop), C.tw_handle(h), C.int64_t(n)))
}
