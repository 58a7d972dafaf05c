/*
 * c-echo: a tickwire client in plain C. It connects with a connect token,
 * sends COUNT reliable messages (at most WINDOW awaiting their echo), and
 * checks that the server echoes each back exactly once, in order, with
 * the bytes it sent. It prints one line per echo ("echo N") and a
 * summary, and exits 0 only if every echo came back right.
 *
 *     go build -buildmode=c-archive -o libtickwire.a ./capi
 *     gcc -O2 -I capi -o c-echo examples/c-echo/echo.c libtickwire.a -lpthread
 *     ./c-echo TOKEN [SERVER_ADDR [COUNT]]
 *
 * The game loop is netcode.io's: once per frame, tw_client_update, then
 * tw_client_poll until it returns TW_EVENT_NONE.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tickwire.h"

/* The whole run must finish within this many seconds. */
#define DEADLINE_S 120.0
/* At most this many messages wait for their echo: the server's echoes
 * then never fill its reliable queue either. */
#define WINDOW 64

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void frame_sleep(void) {
	struct timespec ts = {0, 1000000}; /* 1 ms: a game's frame, shortened */
	nanosleep(&ts, NULL);
}

/* Message i: its number (4 bytes, little-endian), then i % 61 bytes of a
 * pattern of i: 4 to 64 bytes. */
static size_t make_message(uint32_t i, uint8_t *buf) {
	size_t n = 4 + i % 61;
	buf[0] = (uint8_t)i;
	buf[1] = (uint8_t)(i >> 8);
	buf[2] = (uint8_t)(i >> 16);
	buf[3] = (uint8_t)(i >> 24);
	for (size_t j = 4; j < n; j++)
		buf[j] = (uint8_t)(i * 7 + j);
	return n;
}

static void print_error(const char *what, tw_handle h, tw_result rc) {
	char msg[256];
	tw_last_error(h, msg, sizeof msg);
	fprintf(stderr, "c-echo: %s: %s (%d): %s\n", what, tw_result_string(rc), rc, msg);
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s TOKEN [SERVER_ADDR [COUNT]]\n", argv[0]);
		return 2;
	}
	const char *addr = argc > 2 && argv[2][0] ? argv[2] : NULL;
	uint32_t count = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 1000;
	setvbuf(stdout, NULL, _IOLBF, 0); /* whatever happens, the lines so far are out */

	tw_handle client;
	tw_result rc = tw_client_create(TW_ABI_VERSION, argv[1], addr, NULL, &client);
	if (rc != TW_OK) {
		print_error("create", 0, rc);
		return 1;
	}

	double start = now_s();
	uint32_t sent = 0, echoed = 0;
	int connected = 0, closing = 0, ok = 1;
	uint8_t msg[64], buf[64];
	for (;;) {
		double now = now_s();
		if (now - start > DEADLINE_S) {
			fprintf(stderr, "c-echo: deadline: %u of %u echoes after %.0f s\n", echoed, count, DEADLINE_S);
			ok = 0;
			break;
		}
		tw_client_update(client, now);

		tw_event ev;
		int ended = 0;
		for (;;) {
			rc = tw_client_poll(client, &ev, buf, sizeof buf);
			if (rc == TW_ERR_BUFFER_TOO_SMALL) {
				/* Longer than buf: let the library allocate it. */
				rc = tw_client_poll(client, &ev, NULL, 0);
			}
			if (rc != TW_OK) {
				print_error("poll", client, rc);
				ok = 0;
				ended = 1;
				break;
			}
			if (ev.kind == TW_EVENT_NONE)
				break;
			switch (ev.kind) {
			case TW_EVENT_CONNECTED: {
				tw_accept_info info;
				if (tw_client_info(client, &info) == TW_OK)
					printf("connected: conn %u, client %llu, tick rate %u\n", info.conn_id,
					       (unsigned long long)info.client_id, info.tick_rate);
				connected = 1;
				break;
			}
			case TW_EVENT_MESSAGE: {
				size_t want = make_message(echoed, msg);
				uint32_t got = ev.size >= 4 ? (uint32_t)ev.data[0] | (uint32_t)ev.data[1] << 8 |
				                                  (uint32_t)ev.data[2] << 16 | (uint32_t)ev.data[3] << 24
				                            : UINT32_MAX;
				printf("echo %u\n", got);
				if (ev.delivery != TW_DELIVERY_RELIABLE || ev.channel != 3 || ev.size != want ||
				    memcmp(ev.data, msg, want) != 0) {
					fprintf(stderr, "c-echo: echo %u: got message %u (%llu bytes, delivery %u, channel %u)\n",
					        echoed, got, (unsigned long long)ev.size, ev.delivery, ev.channel);
					ok = 0;
				}
				echoed++;
				if (ev.flags & TW_EVENT_OWNED)
					tw_free(ev.data);
				break;
			}
			case TW_EVENT_DISCONNECTED: {
				char why[256];
				tw_last_error(client, why, sizeof why);
				printf("disconnected: %s%s (%s)\n", tw_disconnect_string(ev.reason),
				       ev.flags & TW_EVENT_REMOTE ? " by the server" : "", why);
				if (!closing)
					ok = 0;
				ended = 1;
				break;
			}
			}
		}
		if (ended)
			break;

		/* Send what the window and the reliable queue take this frame. */
		while (connected && !closing && sent < count && sent - echoed < WINDOW) {
			size_t n = make_message(sent, msg);
			rc = tw_client_send(client, TW_DELIVERY_RELIABLE, 3, msg, n);
			if (rc == TW_ERR_QUEUE_FULL)
				break; /* the next frame */
			if (rc != TW_OK) {
				print_error("send", client, rc);
				ok = 0;
				break;
			}
			sent++;
		}
		if (!ok && !closing) {
			tw_client_close(client);
			closing = 1;
		}
		if (connected && !closing && echoed >= count) {
			tw_stats st;
			if (tw_client_stats(client, &st) == TW_OK)
				printf("stats: rtt %.1f ms, loss %.3f, %llu bytes out, %llu bytes in\n", st.rtt_ms, st.loss,
				       (unsigned long long)st.bytes_out, (unsigned long long)st.bytes_in);
			tw_client_close(client);
			closing = 1;
		}
		frame_sleep();
	}
	tw_client_free(client);
	printf("%s: %u sent, %u echoed\n", ok && echoed == count ? "ok" : "FAILED", sent, echoed);
	return ok && echoed == count ? 0 : 1;
}
