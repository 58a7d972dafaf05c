/*
 * abi.c checks libtickwire's C contract from C: struct layouts, the ABI
 * version check, every error code a caller can provoke (unknown
 * handles, NULL pointers, short buffers, bad values), both ways of
 * receiving a message, and a client's whole life against a server that
 * echoes every message (with its delivery, channel and postmark).
 * capi's TestCABIContract builds it against the library and runs it:
 *
 *     abi TOKEN SILENT_ADDR
 *
 * TOKEN opens a session on the echo server; SILENT_ADDR is a UDP address
 * where nothing ever answers. It prints "PASS n checks" and exits 0, or
 * prints each failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"
#ifdef TW_GENERATED_HEADER
/* cgo's own header, included after tickwire.h: the C compiler checks
 * that both declare every function alike. */
#include TW_GENERATED_HEADER
#endif

static int checks, failures;

#define CHECK(cond)                                                                           \
	do {                                                                                      \
		checks++;                                                                             \
		if (!(cond)) {                                                                        \
			failures++;                                                                       \
			char msg_[256];                                                                   \
			tw_last_error(0, msg_, sizeof msg_);                                              \
			printf("FAIL %s:%d: %s (last process error: %s)\n", __FILE__, __LINE__, #cond, msg_); \
		}                                                                                     \
	} while (0)

#define CHECK_RC(call, want)                                                                 \
	do {                                                                                     \
		tw_result rc_ = (call);                                                              \
		checks++;                                                                            \
		if (rc_ != (want)) {                                                                 \
			failures++;                                                                      \
			printf("FAIL %s:%d: %s = %d (%s), want %s\n", __FILE__, __LINE__, #call, rc_,    \
			       tw_result_string(rc_), #want);                                            \
		}                                                                                    \
	} while (0)

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void frame_sleep(void) {
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

/* wait runs frames until an event of kind arrives (copying messages into
 * buf), skipping other kinds, for at most 30 s. Returns 1 if it came. */
static int wait_event(tw_handle c, uint32_t kind, tw_event *ev, uint8_t *buf, size_t cap) {
	double end = now_s() + 30;
	while (now_s() < end) {
		if (tw_client_update(c, now_s()) != TW_OK)
			return 0;
		for (;;) {
			tw_result rc = tw_client_poll(c, ev, buf, cap);
			if (rc != TW_OK || ev->kind == TW_EVENT_NONE)
				break;
			if (ev->kind == kind)
				return 1;
			if (ev->kind == TW_EVENT_DISCONNECTED) {
				char msg[256];
				tw_last_error(c, msg, sizeof msg);
				printf("waiting for event kind %u: disconnected: %s, %s\n", kind,
				       tw_disconnect_string(ev->reason), msg);
				return 0;
			}
		}
		frame_sleep();
	}
	printf("no event of kind %u within 30 s\n", kind);
	return 0;
}

static int contains(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void layout(void) {
	/* Declared in tickwire.h for 64-bit targets; C#, Rust and Zig
	 * bindings write the same offsets by hand. */
	CHECK(sizeof(void *) != 8 || sizeof(tw_event) == 112);
	CHECK(sizeof(void *) != 8 || offsetof(tw_event, data) == 24);
	CHECK(offsetof(tw_event, handle) == 8);
	CHECK(offsetof(tw_event, time) == 16);
	CHECK(sizeof(void *) != 8 || offsetof(tw_event, reason) == 52);
	CHECK(sizeof(tw_client_config) == 48);
	CHECK(sizeof(tw_accept_info) == 40);
	CHECK(offsetof(tw_accept_info, players) == 28);
	CHECK(sizeof(tw_stats) == 128);
	/* ABI version 2: the commits mode. */
	CHECK(offsetof(tw_event, player) == 60);
	CHECK(offsetof(tw_event, seq) == 64);
	CHECK(offsetof(tw_event, command) == 68);
	CHECK(offsetof(tw_event, reserved) == 72);
	CHECK(sizeof(tw_commits_config) == 96);
	CHECK(offsetof(tw_commits_config, input_size) == 48);
	CHECK(sizeof(tw_commit_info) == 80);
	CHECK(offsetof(tw_commit_info, server_tick) == 56);
	CHECK(sizeof(tw_commit_stats) == 128);
	CHECK(offsetof(tw_commit_stats, stall_max_ms) == 80);
}

static void library(void) {
	char msg[256];
	CHECK(tw_abi_version() == TW_ABI_VERSION);
	CHECK(strcmp(tw_result_string(TW_OK), "ok") == 0);
	CHECK(strcmp(tw_result_string(TW_ERR_QUEUE_FULL), "send queue full") == 0);
	CHECK(strcmp(tw_result_string(-999), "unknown") == 0);
	CHECK(tw_result_string(TW_ERR_INVALID_HANDLE) == tw_result_string(TW_ERR_INVALID_HANDLE)); /* static */
	CHECK(strcmp(tw_disconnect_string(TW_DISCONNECT_DENIED), "denied") == 0);
	CHECK(strcmp(tw_disconnect_string(TW_DISCONNECT_TIMEOUT), "timeout") == 0);
	CHECK(strcmp(tw_disconnect_string(0), "unknown") == 0);
	CHECK(strcmp(tw_deny_string(TW_DENY_TOKEN_USED), "token used") == 0);
	CHECK(strcmp(tw_deny_string(200), "unknown") == 0);
	tw_free(NULL);

	/* Unknown handles: every function says so, nothing crashes. */
	tw_event ev;
	tw_stats st;
	tw_accept_info info;
	tw_handle bad[] = {0, 123456789, UINT64_MAX};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_RC(tw_client_update(bad[i], 1.0), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_poll(bad[i], &ev, NULL, 0), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_send(bad[i], TW_DELIVERY_RELIABLE, 0, "x", 1), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_send_at(bad[i], TW_DELIVERY_RELIABLE, 0, 5, "x", 1), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_flush(bad[i]), TW_ERR_INVALID_HANDLE);
		CHECK(tw_client_state(bad[i]) == TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_info(bad[i], &info), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_stats(bad[i], &st), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_close(bad[i]), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_client_free(bad[i]), TW_ERR_INVALID_HANDLE);
		tw_commit_info ci;
		tw_commit_stats cs;
		uint32_t tick;
		CHECK_RC(tw_commits_update(bad[i], 1.0), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_poll(bad[i], &ev, NULL, 0), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_issue(bad[i], "12345678", 8, &tick), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_sum(bad[i], 1, 2), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_state(bad[i], 1, "x", 1), TW_ERR_INVALID_HANDLE);
		CHECK(tw_commits_conn_state(bad[i]) == TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_info(bad[i], &ci), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_stats(bad[i], &cs), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_transport_stats(bad[i], &st), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_close(bad[i]), TW_ERR_INVALID_HANDLE);
		CHECK_RC(tw_commits_free(bad[i]), TW_ERR_INVALID_HANDLE);
	}
	tw_last_error(0, msg, sizeof msg);
	CHECK(contains(msg, "names no object"));

	/* tw_last_error works like snprintf. */
	size_t n = tw_last_error(0, NULL, 0);
	CHECK(n == strlen(msg));
	char small[8];
	memset(small, 'x', sizeof small);
	CHECK(tw_last_error(0, small, sizeof small) == n);
	CHECK(small[7] == 0 && strncmp(small, msg, 7) == 0);
	CHECK(tw_last_error(0, small, 1) == n && small[0] == 0);
}

static void create_errors(const char *token) {
	char msg[256];
	tw_handle h = 77;
	CHECK_RC(tw_client_create(TW_ABI_VERSION + 1, token, NULL, NULL, &h), TW_ERR_ABI_VERSION);
	tw_last_error(0, msg, sizeof msg);
	CHECK(contains(msg, "ABI version"));
	CHECK(h == 77); /* out untouched on failure */
	CHECK_RC(tw_client_create(TW_ABI_VERSION, NULL, NULL, NULL, &h), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, NULL, NULL, NULL), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_create(TW_ABI_VERSION, "not a token", NULL, NULL, &h), TW_ERR_BAD_TOKEN);
	tw_last_error(0, msg, sizeof msg);
	CHECK(contains(msg, "bad connect token"));
	CHECK_RC(tw_client_create(TW_ABI_VERSION, "", NULL, NULL, &h), TW_ERR_BAD_TOKEN);
	/* A string with no NUL within 8 KiB. */
	char *huge = malloc(10000);
	memset(huge, 'A', 10000);
	CHECK_RC(tw_client_create(TW_ABI_VERSION, huge, NULL, NULL, &h), TW_ERR_INVALID_ARGUMENT);
	huge[9999] = 0;
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, huge, NULL, &h), TW_ERR_INVALID_ARGUMENT);
	free(huge);
	CHECK(h == 77);
}

/* commits_contract: a commits client's bad input, and handles of the
 * other kind, before any state (the echo server runs no relay; the
 * token may be spent: nothing here needs the connection). */
static void commits_contract(const char *token) {
	char msg[256];
	tw_handle h = 77, k = 0, c = 0;
	tw_commits_config cfg;
	memset(&cfg, 0, sizeof cfg);
	CHECK_RC(tw_commits_create(TW_ABI_VERSION + 1, token, NULL, &cfg, &h), TW_ERR_ABI_VERSION);
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, token, NULL, NULL, &h), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, token, NULL, &cfg, &h), TW_ERR_INVALID_ARGUMENT); /* input_size 0 */
	tw_last_error(0, msg, sizeof msg);
	CHECK(contains(msg, "input_size"));
	cfg.input_size = 342;
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, token, NULL, &cfg, &h), TW_ERR_INVALID_ARGUMENT);
	cfg.input_size = 8;
	cfg.capacity_ticks = 70000;
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, token, NULL, &cfg, &h), TW_ERR_INVALID_ARGUMENT);
	cfg.capacity_ticks = 0;
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, NULL, NULL, &cfg, &h), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, token, NULL, &cfg, NULL), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, "not a token", NULL, &cfg, &h), TW_ERR_BAD_TOKEN);
	CHECK(h == 77);
	CHECK_RC(tw_commits_create(TW_ABI_VERSION, token, NULL, &cfg, &k), TW_OK);
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, NULL, NULL, &c), TW_OK);

	tw_event ev;
	tw_accept_info info;
	tw_commit_info ci;
	tw_commit_stats cs;
	uint32_t tick = 5;
	/* Each kind's functions refuse the other's handles. */
	CHECK_RC(tw_client_update(k, 1.0), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_client_poll(k, &ev, NULL, 0), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_client_send(k, TW_DELIVERY_RELIABLE, 0, "x", 1), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_client_info(k, &info), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_client_free(k), TW_ERR_WRONG_KIND);
	tw_last_error(k, msg, sizeof msg);
	CHECK(contains(msg, "commits client, not a client"));
	CHECK_RC(tw_commits_update(c, 1.0), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_poll(c, &ev, NULL, 0), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_issue(c, "12345678", 8, &tick), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_sum(c, 1, 1), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_state(c, 1, "x", 1), TW_ERR_WRONG_KIND);
	CHECK(tw_commits_conn_state(c) == TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_info(c, &ci), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_stats(c, &cs), TW_ERR_WRONG_KIND);
	CHECK_RC(tw_commits_free(c), TW_ERR_WRONG_KIND);

	/* Bad arguments. */
	CHECK_RC(tw_commits_update(k, 0.0 / 0.0), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_poll(k, NULL, NULL, 0), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_issue(k, NULL, 8, &tick), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_issue(k, "1234567", 7, &tick), TW_ERR_INVALID_ARGUMENT);
	tw_last_error(k, msg, sizeof msg);
	CHECK(contains(msg, "the game's are 8"));
	CHECK_RC(tw_commits_issue(k, "12345678", 8, &tick), TW_ERR_NOT_CONNECTED); /* no state */
	CHECK_RC(tw_commits_issue(k, "12345678", 8, NULL), TW_ERR_NOT_CONNECTED);
	CHECK(tick == 5);
	CHECK_RC(tw_commits_state(k, 1, NULL, 3), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_state(k, 1, "x", (size_t)1 << 40), TW_ERR_MESSAGE_TOO_LARGE);
	CHECK_RC(tw_commits_state(k, 1, NULL, 0), TW_OK);
	CHECK_RC(tw_commits_sum(k, 1, 2), TW_OK);
	CHECK_RC(tw_commits_info(k, NULL), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_stats(k, NULL), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_transport_stats(k, NULL), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_commits_stats(k, &cs), TW_OK);
	CHECK(cs.issued == 0 && cs.sums_reported == 1);
	CHECK(tw_commits_conn_state(k) == TW_STATE_CONNECTING);
	CHECK_RC(tw_commits_close(k), TW_OK);
	CHECK_RC(tw_commits_close(k), TW_OK);
	CHECK_RC(tw_commits_free(k), TW_OK);
	CHECK_RC(tw_commits_free(k), TW_ERR_INVALID_HANDLE);
	CHECK_RC(tw_commits_update(k, 1.0), TW_ERR_INVALID_HANDLE);
	CHECK_RC(tw_client_free(c), TW_OK);
}

/* echo_session connects with token and checks sending, receiving both
 * ways, info, stats and the close. */
static void echo_session(const char *token) {
	tw_handle c = 0;
	tw_event ev;
	uint8_t buf[256];
	char msg[256];
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, NULL, NULL, &c), TW_OK);
	CHECK(c != 0);
	CHECK(tw_client_state(c) == TW_STATE_CONNECTING);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 0, "x", 1), TW_ERR_NOT_CONNECTED);
	CHECK_RC(tw_client_flush(c), TW_ERR_NOT_CONNECTED);
	tw_accept_info info;
	tw_stats st;
	CHECK_RC(tw_client_info(c, &info), TW_ERR_NOT_CONNECTED);
	CHECK_RC(tw_client_stats(c, &st), TW_ERR_NOT_CONNECTED);
	CHECK_RC(tw_client_poll(c, &ev, buf, sizeof buf), TW_OK);
	CHECK(ev.kind == TW_EVENT_NONE); /* nothing before an update */
	CHECK_RC(tw_client_update(c, NAN), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_update(c, INFINITY), TW_ERR_INVALID_ARGUMENT);
	tw_last_error(c, msg, sizeof msg);
	CHECK(contains(msg, "not a finite time"));
	CHECK_RC(tw_client_poll(c, NULL, buf, sizeof buf), TW_ERR_INVALID_ARGUMENT);

	if (!wait_event(c, TW_EVENT_CONNECTED, &ev, buf, sizeof buf)) {
		CHECK(!"connected");
		tw_client_free(c);
		return;
	}
	CHECK(ev.handle == c);
	CHECK(tw_client_state(c) == TW_STATE_CONNECTED);
	CHECK_RC(tw_client_info(c, &info), TW_OK);
	CHECK(info.player_count == 2 && info.players[0] == 1 && info.players[1] == 2);
	CHECK(info.tick_rate == 60 && info.game_id == 7 && info.client_id == 42 && info.conn_id != 0);
	CHECK_RC(tw_client_info(c, NULL), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_stats(c, NULL), TW_ERR_INVALID_ARGUMENT);

	/* Bad sends. */
	CHECK_RC(tw_client_send(c, 3, 0, "x", 1), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_send(c, UINT32_MAX, 0, "x", 1), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 0, NULL, 5), TW_ERR_INVALID_ARGUMENT);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 0, NULL, SIZE_MAX), TW_ERR_INVALID_ARGUMENT);
	static uint8_t big[200 << 10];
	CHECK_RC(tw_client_send(c, TW_DELIVERY_UNRELIABLE, 0, big, 5000), TW_ERR_MESSAGE_TOO_LARGE);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_SEQUENCED, 0, big, 5000), TW_ERR_MESSAGE_TOO_LARGE);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 0, big, sizeof big), TW_ERR_MESSAGE_TOO_LARGE);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 0, big, SIZE_MAX), TW_ERR_MESSAGE_TOO_LARGE);

	/* A postmarked reliable message of 100 bytes, then an empty one. */
	uint8_t hundred[100];
	for (int i = 0; i < 100; i++)
		hundred[i] = (uint8_t)(i * 3 + 1);
	CHECK_RC(tw_client_send_at(c, TW_DELIVERY_RELIABLE, 9, 77, hundred, sizeof hundred), TW_OK);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 2, NULL, 0), TW_OK);
	CHECK_RC(tw_client_flush(c), TW_OK);

	/* The echo is longer than a 10-byte buffer: it stays first. */
	uint8_t ten[10];
	double end = now_s() + 30;
	tw_result rc = TW_OK;
	for (ev.kind = TW_EVENT_NONE; now_s() < end;) {
		tw_client_update(c, now_s());
		rc = tw_client_poll(c, &ev, ten, sizeof ten);
		if (ev.kind != TW_EVENT_NONE)
			break;
		frame_sleep();
	}
	CHECK(rc == TW_ERR_BUFFER_TOO_SMALL);
	CHECK(ev.kind == TW_EVENT_MESSAGE && ev.size == 100 && ev.data == NULL);
	tw_last_error(c, msg, sizeof msg);
	CHECK(contains(msg, "100 bytes"));
	/* ... and comes whole into memory the library allocates. */
	CHECK_RC(tw_client_poll(c, &ev, NULL, 0), TW_OK);
	CHECK(ev.kind == TW_EVENT_MESSAGE && ev.size == 100 && ev.data != NULL);
	CHECK(ev.flags == (TW_EVENT_OWNED | TW_EVENT_POSTMARKED) && ev.tick == 77);
	CHECK(ev.delivery == TW_DELIVERY_RELIABLE && ev.channel == 9);
	CHECK(ev.data && memcmp(ev.data, hundred, 100) == 0);
	CHECK(ev.handle == c);
	tw_free(ev.data);

	/* The empty message: no bytes, no allocation. */
	CHECK(wait_event(c, TW_EVENT_MESSAGE, &ev, buf, sizeof buf));
	CHECK(ev.size == 0 && ev.data == NULL && ev.channel == 2 && ev.flags == 0);

	/* Unreliable and sequenced messages, sent each frame until one of
	 * each comes back (either may be lost). */
	int got_unrel = 0, got_seq = 0;
	end = now_s() + 30;
	while ((!got_unrel || !got_seq) && now_s() < end) {
		CHECK_RC(tw_client_send(c, TW_DELIVERY_UNRELIABLE, 4, "unrel", 5), TW_OK);
		CHECK_RC(tw_client_send_at(c, TW_DELIVERY_SEQUENCED, 5, 1234, "seq", 3), TW_OK);
		tw_client_update(c, now_s());
		while (tw_client_poll(c, &ev, buf, sizeof buf) == TW_OK && ev.kind != TW_EVENT_NONE) {
			if (ev.kind != TW_EVENT_MESSAGE)
				continue;
			if (ev.delivery == TW_DELIVERY_UNRELIABLE && ev.channel == 4 && ev.size == 5 &&
			    memcmp(ev.data, "unrel", 5) == 0 && ev.flags == 0 && ev.data == buf)
				got_unrel = 1;
			if (ev.delivery == TW_DELIVERY_SEQUENCED && ev.channel == 5 && ev.size == 3 &&
			    memcmp(ev.data, "seq", 3) == 0 && ev.flags == TW_EVENT_POSTMARKED && ev.tick == 1234)
				got_seq = 1;
		}
		frame_sleep();
	}
	CHECK(got_unrel && got_seq);

	CHECK_RC(tw_client_stats(c, &st), TW_OK);
	CHECK(st.packets_out > 0 && st.bytes_out > 0 && st.packets_in > 0 && st.bytes_in > 0);
	CHECK(st.messages_out >= 4 && st.messages_in >= 4);
	CHECK(st.rtt_ms >= 0 && st.loss >= 0 && st.loss <= 1);

	/* Close: the end comes as an event, then nothing sends. */
	CHECK_RC(tw_client_close(c), TW_OK);
	CHECK_RC(tw_client_close(c), TW_OK);
	CHECK(wait_event(c, TW_EVENT_DISCONNECTED, &ev, buf, sizeof buf));
	CHECK(ev.reason == TW_DISCONNECT_CLOSED && !(ev.flags & TW_EVENT_REMOTE));
	CHECK(tw_client_state(c) == TW_STATE_DISCONNECTED);
	CHECK_RC(tw_client_send(c, TW_DELIVERY_RELIABLE, 0, "x", 1), TW_ERR_NOT_CONNECTED);
	CHECK_RC(tw_client_stats(c, &st), TW_OK); /* final values */
	CHECK_RC(tw_client_poll(c, &ev, buf, sizeof buf), TW_OK);
	CHECK(ev.kind == TW_EVENT_NONE);

	/* Free: the handle names nothing from then on. */
	CHECK_RC(tw_client_free(c), TW_OK);
	CHECK_RC(tw_client_free(c), TW_ERR_INVALID_HANDLE);
	CHECK_RC(tw_client_update(c, 1.0), TW_ERR_INVALID_HANDLE);
	CHECK(tw_client_state(c) == TW_ERR_INVALID_HANDLE);

	/* The same token again: the server refuses a used token. */
	tw_handle again = 0;
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, NULL, NULL, &again), TW_OK);
	CHECK(again != c); /* handles are never reused */
	CHECK(wait_event(again, TW_EVENT_DISCONNECTED, &ev, buf, sizeof buf));
	CHECK(ev.reason == TW_DISCONNECT_DENIED && ev.detail == TW_DENY_TOKEN_USED);
	tw_last_error(again, msg, sizeof msg);
	CHECK(contains(msg, "token used"));
	CHECK_RC(tw_client_info(again, &info), TW_ERR_NOT_CONNECTED);
	CHECK_RC(tw_client_free(again), TW_OK);
}

/* silent checks the connections that never open, against an address
 * where nothing answers. */
static void silent(const char *token, const char *addr) {
	tw_handle c;
	tw_event ev;
	uint8_t buf[64];
	char msg[256];

	tw_client_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.handshake_timeout_ms = 300;
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, addr, &cfg, &c), TW_OK);
	CHECK(wait_event(c, TW_EVENT_DISCONNECTED, &ev, buf, sizeof buf));
	CHECK(ev.reason == TW_DISCONNECT_HANDSHAKE_TIMEOUT && ev.flags == 0);
	CHECK(tw_client_state(c) == TW_STATE_DISCONNECTED);
	CHECK_RC(tw_client_free(c), TW_OK);

	/* A config out of range fails the connect, saying which field. */
	memset(&cfg, 0, sizeof cfg);
	cfg.heartbeat_ms = 2000;
	cfg.timeout_ms = 1000;
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, addr, &cfg, &c), TW_OK);
	CHECK(wait_event(c, TW_EVENT_DISCONNECTED, &ev, buf, sizeof buf));
	CHECK(ev.reason == TW_DISCONNECT_CONNECT_FAILED);
	tw_last_error(c, msg, sizeof msg);
	CHECK(contains(msg, "Timeout"));
	CHECK_RC(tw_client_free(c), TW_OK);

	/* Closing while connecting gives up at once. */
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, addr, NULL, &c), TW_OK);
	CHECK_RC(tw_client_close(c), TW_OK);
	CHECK(wait_event(c, TW_EVENT_DISCONNECTED, &ev, buf, sizeof buf));
	CHECK(ev.reason == TW_DISCONNECT_CLOSED);
	CHECK_RC(tw_client_free(c), TW_OK);

	/* Freeing while connecting does not wait for the handshake. */
	CHECK_RC(tw_client_create(TW_ABI_VERSION, token, addr, NULL, &c), TW_OK);
	double t0 = now_s();
	CHECK_RC(tw_client_free(c), TW_OK);
	CHECK(now_s() - t0 < 4); /* the handshake timeout is 5 s */
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s TOKEN SILENT_ADDR\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	layout();
	library();
	create_errors(argv[1]);
	echo_session(argv[1]);
	silent(argv[1], argv[2]);
	commits_contract(argv[1]);
	printf("%s %d checks, %d failed\n", failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
