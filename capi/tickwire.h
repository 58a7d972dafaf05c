/*
 * tickwire.h: the C ABI of tickwire (libtickwire.a / libtickwire.so).
 *
 * Build the library from the tickwire module's root:
 *
 *     go build -buildmode=c-archive -o libtickwire.a ./capi    (static)
 *     go build -buildmode=c-shared  -o libtickwire.so ./capi   (shared)
 *
 * and link a program against it with this header:
 *
 *     cc -I capi game.c libtickwire.a -lpthread -o game
 *
 * The library is the Go engine itself (the root package's Client), not a
 * second implementation of the protocol: it runs the Go runtime in the
 * process, on threads of its own.
 *
 * Model (netcode.io's client, ENet's typed events, GameNetworkingSockets'
 * flat API):
 *
 *   - Objects are named by integer handles (tw_handle), never by
 *     pointers into the library. Handles are never reused: a handle that
 *     was freed names nothing, for good (TW_ERR_INVALID_HANDLE). Every kind
 *     of object shares the one handle space; a function given a handle of
 *     another kind fails with TW_ERR_WRONG_KIND.
 *   - Nothing calls back. Once per frame the game calls
 *     tw_client_update(client, now), then tw_client_poll until it
 *     returns an event of kind TW_EVENT_NONE.
 *   - A message's bytes are either copied into a buffer the caller
 *     passes to tw_client_poll, or allocated by the library and owned by
 *     the caller until tw_free.
 *   - Every function returns a tw_result (TW_OK, or a negative TW_ERR_*
 *     code) unless it says otherwise; a failed call leaves a message for
 *     tw_last_error. Bad input (an unknown handle, a NULL pointer, a
 *     buffer too short, an out-of-range value) is an error code, never a
 *     crash. A pointer that is not NULL must be valid for the size the
 *     call says: the library cannot check that.
 *
 * Threads. Every function may be called from any thread; the library
 * serialises the calls on one handle. The intended use is one game thread
 * per client: two threads polling one client split its events between
 * them, and the retry after TW_ERR_BUFFER_TOO_SMALL (tw_client_poll)
 * assumes nobody polled in between. tw_client_free may run while another
 * thread is inside a call on the same handle: that call completes (or
 * fails with TW_ERR_NOT_CONNECTED) and later calls fail with
 * TW_ERR_INVALID_HANDLE. The library's own threads never run the
 * caller's code.
 *
 * Time. The connection runs on the library's threads and clock: it sends
 * one packet per server tick, retransmits, answers keep-alives and times
 * out whether or not the game calls tw_client_update. The now passed to
 * tw_client_update is the game's clock (seconds, any origin): it stamps
 * the events that update makes pollable (tw_event.time), and nothing
 * else. A game that stops calling update stays connected; what arrives
 * waits for it, up to 65,536 messages or 8 MiB, beyond which new
 * messages are dropped and counted (tw_stats.messages_dropped).
 *
 * Every struct has a fixed layout of fixed-width fields (no enums, no
 * bool) so that C#, Rust and Zig can declare it field for field; the
 * sizes are given for 64-bit targets. A struct's reserved fields are for
 * later ABI versions: callers zero them (or the whole struct) and
 * ignore them on output.
 */
#ifndef TICKWIRE_H
#define TICKWIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * TW_ABI_VERSION is the version of this header. tw_client_create takes
 * the version the caller was compiled with (pass TW_ABI_VERSION) and
 * fails with TW_ERR_ABI_VERSION unless the library is the same version.
 * Any change to a function's signature, a struct's layout or a
 * constant's meaning makes a new version. Version 2 added the commits
 * mode (tw_commits_*, event kinds 16..21, and tw_event's player, seq and
 * command, which were reserved).
 */
#define TW_ABI_VERSION 2

/* A handle names one object of the library. 0 is never a handle. */
typedef uint64_t tw_handle;

/* TW_OK or one of the negative TW_ERR_* codes. */
typedef int32_t tw_result;

enum {
	TW_OK = 0,
	/* The handle names no object: 0, never returned by a create
	 * function, or already freed. */
	TW_ERR_INVALID_HANDLE = -1,
	/* The handle names an object of another kind. */
	TW_ERR_WRONG_KIND = -2,
	/* An argument is out of range: NULL where a pointer is required, a
	 * delivery that is none of TW_DELIVERY_*, a string with no NUL in
	 * its first 8 KiB, a time that is not finite. */
	TW_ERR_INVALID_ARGUMENT = -3,
	/* The caller was compiled against another TW_ABI_VERSION. */
	TW_ERR_ABI_VERSION = -4,
	/* The connect token does not parse (tw_last_error says why). The
	 * library checks its layout; only the server can open its sealed
	 * part, so a token the server refuses ends the connection with
	 * TW_DISCONNECT_DENIED instead. */
	TW_ERR_BAD_TOKEN = -5,
	/* The client is still connecting, or its session has ended. */
	TW_ERR_NOT_CONNECTED = -6,
	/* The message exceeds what its delivery allows: one packet
	 * (about 1,150 bytes at the default packet size) for unreliable and
	 * sequenced messages, just under 128 KiB for reliable ones. */
	TW_ERR_MESSAGE_TOO_LARGE = -7,
	/* The connection's send queue is full: the server is not keeping
	 * up. Nothing was queued; retry later or drop the message. */
	TW_ERR_QUEUE_FULL = -8,
	/* tw_client_poll: the message does not fit the buffer. The event
	 * says its size and stays first in line; poll again with a buffer
	 * of at least event.size bytes. */
	TW_ERR_BUFFER_TOO_SMALL = -9,
	/* The library could not allocate memory for an owned message. */
	TW_ERR_NO_MEMORY = -10,
	/* A bug in the library (tw_last_error says what). The handle
	 * stays valid. */
	TW_ERR_INTERNAL = -11
};

/* How a message travels (tw_client_send, tw_event.delivery). */
enum {
	/* May be lost, duplicated or arrive out of order. */
	TW_DELIVERY_UNRELIABLE = 0,
	/* May be lost; an older message on a channel is never delivered
	 * after a newer one (state updates, voice). */
	TW_DELIVERY_SEQUENCED = 1,
	/* Exactly once and in the order sent, all channels together. */
	TW_DELIVERY_RELIABLE = 2
};

/* What a client is doing (tw_client_state). */
enum {
	TW_STATE_CONNECTING = 1,
	TW_STATE_CONNECTED = 2,
	/* The connection ended, or never opened: a TW_EVENT_DISCONNECTED
	 * event says why. The handle stays valid until tw_client_free. */
	TW_STATE_DISCONNECTED = 3
};

/* tw_event.kind. Kinds 16..31 are the commits mode's (tw_commits_poll;
 * see "Commits mode" below); a commits client also has the first three. */
enum {
	/* No event: every pollable event was read. */
	TW_EVENT_NONE = 0,
	/* The server accepted the client; it may send now. Comes once,
	 * first. */
	TW_EVENT_CONNECTED = 1,
	/* A message from the server: data, size, delivery, channel and,
	 * with TW_EVENT_POSTMARKED, tick. */
	TW_EVENT_MESSAGE = 2,
	/* The connection ended or could not open: reason (TW_DISCONNECT_*)
	 * and, for TW_DISCONNECT_DENIED, detail (TW_DENY_*). Comes once,
	 * last, after every message that arrived before the end. */
	TW_EVENT_DISCONNECTED = 3,
	/* With tw_client_config.rejoin: the session was lost without a
	 * leave (reason: TW_DISCONNECT_*, TW_EVENT_REMOTE) and the client is
	 * coming back into its player slots by itself; sending fails with
	 * TW_ERR_NOT_CONNECTED until TW_EVENT_REJOINED, or a
	 * TW_EVENT_DISCONNECTED ends it. Messages before it came on the lost
	 * session; reliable messages in flight on it are lost with it. */
	TW_EVENT_REJOINING = 4,
	/* The client is back in its slots on a new session (detail: the
	 * attempt that succeeded); the game goes on. */
	TW_EVENT_REJOINED = 5,
	/* Commits mode: load this committed state. tick, data and size
	 * (the game's canonical bytes, as another client's game gave them
	 * to tw_commits_state; size 0: the game's blank world, a new game),
	 * TW_EVENT_RESYNC after the first. */
	TW_EVENT_COMMITS_STATE = 16,
	/* Commits mode: a command the committed world runs at tick: player,
	 * seq (the player's numbering; joins and leaves the server's),
	 * command (TW_COMMAND_*) and, for TW_COMMAND_INPUT, data and size
	 * (the input_size bytes the player issued). A tick's commands come
	 * in execution order (joins and leaves, then inputs by player)
	 * before its TW_EVENT_COMMITS_TICK. */
	TW_EVENT_COMMITS_COMMAND = 17,
	/* Commits mode: step the committed world to tick with the commands
	 * that came since the last TICK (none: nobody acted); then report
	 * its checksum (tw_commits_sum). Every tick after the state's
	 * comes, in order. */
	TW_EVENT_COMMITS_TICK = 18,
	/* Commits mode: the relay asks for the committed state after tick
	 * (the TICK just polled): answer with tw_commits_state. */
	TW_EVENT_COMMITS_STATE_REQUEST = 19,
	/* Commits mode: the server took the client out of the commit (its
	 * game fell more than the server's buffer behind, or the connection
	 * was dropped as too slow); detail is the count so far. When it
	 * is let back in, a TW_EVENT_COMMITS_STATE with TW_EVENT_RESYNC
	 * comes (in the same update, before or after this event, or later). */
	TW_EVENT_COMMITS_KICKED = 20,
	/* Commits mode: the client's checksum differed from the majority's;
	 * detail is the count so far. A TW_EVENT_COMMITS_STATE with
	 * TW_EVENT_RESYNC comes (as for TW_EVENT_COMMITS_KICKED). */
	TW_EVENT_COMMITS_DESYNC = 21
};

/* tw_event.command for TW_EVENT_COMMITS_COMMAND. */
enum {
	TW_COMMAND_INPUT = 0, /* a player's command: data, size */
	TW_COMMAND_JOIN = 1,  /* player joins before the tick's step */
	TW_COMMAND_LEAVE = 2  /* player leaves before the tick's step */
};

/* tw_event.flags. */
enum {
	/* TW_EVENT_MESSAGE: the sender postmarked the message with a tick
	 * (tw_event.tick). */
	TW_EVENT_POSTMARKED = 1u << 0,
	/* TW_EVENT_DISCONNECTED: the server ended the session, or went
	 * silent (TW_DISCONNECT_TIMEOUT). */
	TW_EVENT_REMOTE = 1u << 1,
	/* TW_EVENT_MESSAGE: data was allocated by the library and belongs
	 * to the caller, who releases it with tw_free. */
	TW_EVENT_OWNED = 1u << 2,
	/* TW_EVENT_COMMITS_STATE: not the connection's first state (a kick
	 * or a desync resynchronised the client). */
	TW_EVENT_RESYNC = 1u << 3
};

/* tw_event.reason for TW_EVENT_DISCONNECTED. 1..8 are the protocol's own
 * reasons, what one end tells the other; 64 and up end a connection
 * that never opened. */
enum {
	TW_DISCONNECT_CLOSED = 1,       /* the client (tw_client_close) or server application closed it */
	TW_DISCONNECT_TIMEOUT = 2,      /* no packet within the timeout */
	TW_DISCONNECT_KICKED = 3,       /* the server removed the client */
	TW_DISCONNECT_SHUTDOWN = 4,     /* the server is stopping */
	TW_DISCONNECT_PROTOCOL = 5,     /* the peer broke the protocol */
	TW_DISCONNECT_TOO_SLOW = 6,     /* fell behind what the server's game allows */
	TW_DISCONNECT_HOST_MIGRATE = 7, /* the host handed the game over */
	TW_DISCONNECT_NO_STATE = 8,     /* commits relay: no client gave the committed state this one needed */
	TW_DISCONNECT_REPLACED = 9,     /* the client came back on a new session with its rejoin credential */
	/* The server refused the handshake; tw_event.detail is the
	 * TW_DENY_* reason. */
	TW_DISCONNECT_DENIED = 64,
	/* No server answered within the handshake timeout. */
	TW_DISCONNECT_HANDSHAKE_TIMEOUT = 65,
	/* The connection could not be attempted: a server address that
	 * does not resolve, no socket, a config out of range
	 * (tw_last_error says which). */
	TW_DISCONNECT_CONNECT_FAILED = 66
};

/* tw_event.detail for TW_DISCONNECT_DENIED: why the server refused. */
enum {
	TW_DENY_INVALID_TOKEN = 1,     /* the token did not open (forged or tampered) */
	TW_DENY_EXPIRED = 2,           /* the token or cookie expired */
	TW_DENY_WRONG_GAME = 3,        /* the token names a game this server does not run */
	TW_DENY_SERVER_FULL = 4,       /* no free connection or player slot */
	TW_DENY_VERSION = 5,           /* the server speaks another protocol version */
	TW_DENY_ALREADY_CONNECTED = 6, /* the token's client id holds a connection */
	TW_DENY_BAD_COOKIE = 7,        /* the handshake did not verify */
	TW_DENY_SHUTTING_DOWN = 8,     /* the server is stopping */
	TW_DENY_TOKEN_USED = 9,        /* the token already opened a session */
	TW_DENY_WRONG_SERVER = 10,     /* the token names other servers */
	TW_DENY_UNKNOWN_KEY = 11,      /* the server has no key with the token's key id */
	TW_DENY_JOIN_REFUSED = 12,     /* the game refused a player (tw_last_error has its reason) */
	TW_DENY_REJOIN = 13            /* a rejoin credential refused: replaced, for other slots, or past the server's grace */
};

/*
 * One event, filled by tw_client_poll and tw_commits_poll. 112 bytes on 64-bit targets.
 * Fields a kind does not use are zero.
 */
typedef struct tw_event {
	uint32_t kind;     /* TW_EVENT_* */
	uint32_t flags;    /* TW_EVENT_POSTMARKED | TW_EVENT_REMOTE | TW_EVENT_OWNED */
	tw_handle handle;  /* the object the event is about */
	double time;       /* the now of the tw_client_update that made it pollable */
	/* TW_EVENT_MESSAGE: the message's bytes: the caller's buffer, or
	 * with TW_EVENT_OWNED the library's allocation (release with
	 * tw_free). NULL when size is 0. */
	uint8_t *data;
	uint64_t size;     /* TW_EVENT_MESSAGE: bytes in the message */
	uint32_t delivery; /* TW_EVENT_MESSAGE: TW_DELIVERY_* */
	uint32_t channel;  /* TW_EVENT_MESSAGE: 0..255 */
	uint32_t tick;     /* TW_EVENT_MESSAGE with TW_EVENT_POSTMARKED: the postmark */
	uint32_t reason;   /* TW_EVENT_DISCONNECTED: TW_DISCONNECT_* */
	uint32_t detail;   /* TW_EVENT_DISCONNECTED, TW_DISCONNECT_DENIED: TW_DENY_*; TW_EVENT_COMMITS_KICKED, _DESYNC: the count */
	uint32_t player;   /* TW_EVENT_COMMITS_COMMAND: the player slot */
	uint32_t seq;      /* TW_EVENT_COMMITS_COMMAND: the command's number */
	uint32_t command;  /* TW_EVENT_COMMITS_COMMAND: TW_COMMAND_* */
	uint64_t reserved[5];
} tw_event;

/*
 * Options of a new client. A zeroed struct (or NULL) means every
 * default. 48 bytes.
 */
typedef struct tw_client_config {
	/* Bounds the whole connection attempt. 0: 5000 ms. */
	uint32_t handshake_timeout_ms;
	/* The longest the client stays silent: a keep-alive goes out when
	 * nothing else has for this long. 0: 500 ms. */
	uint32_t heartbeat_ms;
	/* The session ends (TW_DISCONNECT_TIMEOUT) after this long without
	 * a packet from the server; more than the server's heartbeat. 0: the
	 * server's own timeout, which it sends in its accept (10 s by
	 * default). */
	uint32_t timeout_ms;
	/* No effect (kept for the layout): every connection protects new
	 * reliable data on lossy links by the loss it measures, with
	 * Reed-Solomon parity and, for small frames, copies. */
	uint32_t reliable_fec;
	/* Nonzero: when the session is lost without a leave (the server
	 * went silent past the timeout, or timed the client out), come back
	 * into the same player slots by itself with the rejoin credential
	 * the server gave it, within the server's rejoin grace (30 s by
	 * default): TW_EVENT_REJOINING, then TW_EVENT_REJOINED, or
	 * TW_EVENT_DISCONNECTED if no attempt succeeds. A commits client
	 * then gets a TW_EVENT_COMMITS_STATE with TW_EVENT_RESYNC. */
	uint32_t rejoin;
	/* With rejoin: the attempts at most, 100 ms apart and doubling up
	 * to 4 s. 0: 8. */
	uint32_t rejoin_tries;
	uint64_t reserved[3];
} tw_client_config;

/* What the server told the client when it accepted it
 * (tw_client_info). 40 bytes. */
typedef struct tw_accept_info {
	uint32_t conn_id;      /* the connection id the server assigned */
	uint32_t tick_rate;    /* the server's ticks per second */
	uint64_t client_id;    /* the token's client id */
	uint64_t game_id;      /* the token's game id */
	uint32_t player_count; /* 1..4: the player slots this connection carries */
	uint16_t players[4];   /* the first player_count are the slots */
	uint32_t reserved;
} tw_accept_info;

/* A connection's counters and estimates (tw_client_stats). 128 bytes. */
typedef struct tw_stats {
	double rtt_ms;             /* smoothed round-trip time */
	double jitter_ms;          /* round-trip time variation */
	double loss;               /* 0..1: the fraction of the client's packets the server did not acknowledge */
	uint64_t packets_in;
	uint64_t packets_out;
	uint64_t bytes_in;         /* UDP payload bytes received */
	uint64_t bytes_out;        /* UDP payload bytes sent */
	uint64_t messages_in;
	uint64_t messages_out;
	uint64_t messages_dropped; /* dropped because the game did not poll them (see Time above) */
	uint64_t reliable_queue;   /* reliable segments waiting to be sent or acknowledged */
	uint64_t reserved[5];
} tw_stats;

/* ---- Library ---------------------------------------------------------- */

/* The library's TW_ABI_VERSION. Never fails. */
uint32_t tw_abi_version(void);

/*
 * A constant English name of a code: "ok", "invalid handle", ...
 * ("unknown" for a code this version does not define). The string is
 * static: never free it.
 */
const char *tw_result_string(tw_result code);
/* The same for a TW_DISCONNECT_* reason and a TW_DENY_* reason. */
const char *tw_disconnect_string(uint32_t reason);
const char *tw_deny_string(uint32_t reason);

/*
 * Copies the message of the last failed call on handle into buf, as a
 * NUL-terminated string cut to cap - 1 bytes, and returns its whole
 * length (without the NUL): call again with a larger buffer when the
 * result is cap or more, like snprintf. buf may be NULL when cap is 0.
 * Returns 0 when there is no message.
 *
 * Each handle keeps its own message; a call that succeeds leaves it as
 * it was. Handle 0, or one that names no object, reads the process-wide
 * message: that of the last failed tw_client_create, or of the last call
 * given a handle that named no object, from any thread. Also, when a
 * client's TW_EVENT_DISCONNECTED is made pollable, the client's message
 * becomes the full text of why (the server's denial, the game's
 * refusal, the socket error).
 */
size_t tw_last_error(tw_handle handle, char *buf, size_t cap);

/*
 * Releases a message the library allocated (a TW_EVENT_OWNED event's
 * data). NULL does nothing. Never pass anything else.
 */
void tw_free(void *data);

/* ---- Client ----------------------------------------------------------- */

/*
 * Creates a client and starts connecting; returns at once.
 *
 *   abi_version  TW_ABI_VERSION, the version the caller was compiled with.
 *   token        the connect token as the lobby hands it out: the
 *                URL-safe base64 text (NUL-terminated). The library
 *                copies it.
 *   server_addr  NULL (or "") to try the token's server addresses in
 *                order; else "host:port", the one address to send to
 *                instead (a proxy in front of the server, say). Copied.
 *   config       NULL or a tw_client_config; read during the call only.
 *   out          receives the new handle. Left unchanged on failure.
 *
 * Errors: TW_ERR_ABI_VERSION, TW_ERR_INVALID_ARGUMENT (a NULL token or
 * out, a string with no NUL within 8 KiB), TW_ERR_BAD_TOKEN. They leave
 * the process-wide message (tw_last_error(0, ...)).
 *
 * Whether the connection opens comes later, from tw_client_update and
 * tw_client_poll: TW_EVENT_CONNECTED, or TW_EVENT_DISCONNECTED with
 * TW_DISCONNECT_DENIED, TW_DISCONNECT_HANDSHAKE_TIMEOUT or
 * TW_DISCONNECT_CONNECT_FAILED. A token opens one session only.
 */
tw_result tw_client_create(uint32_t abi_version, const char *token, const char *server_addr,
                           const tw_client_config *config, tw_handle *out);

/*
 * Makes what happened since the last update pollable, in order: the
 * connect or its failure, the messages that arrived, the disconnect.
 * Call it once per frame, then tw_client_poll until TW_EVENT_NONE.
 * Events an earlier update made pollable and nobody polled stay first.
 *
 * now is the game's clock in seconds (any origin); it must be finite.
 * The events get it as their time. Errors: TW_ERR_INVALID_HANDLE,
 * TW_ERR_WRONG_KIND, TW_ERR_INVALID_ARGUMENT (now not finite).
 */
tw_result tw_client_update(tw_handle client, double now);

/*
 * Takes the next pollable event and fills *event; TW_OK with kind
 * TW_EVENT_NONE when there is none.
 *
 * A message's bytes go either
 *   - into buf (cap bytes) when buf is not NULL: event->data = buf. When
 *     the message is longer than cap the call fails with
 *     TW_ERR_BUFFER_TOO_SMALL, fills *event (size, kind, ...) but for
 *     data, and keeps the event first in line for the next poll; or
 *   - when buf is NULL, into memory the library allocates: event->data
 *     is that memory, flags has TW_EVENT_OWNED, and the caller releases
 *     it with tw_free (it is no longer the library's).
 * An empty message has data NULL and size 0 either way.
 *
 * Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND,
 * TW_ERR_INVALID_ARGUMENT (event NULL), TW_ERR_BUFFER_TOO_SMALL,
 * TW_ERR_NO_MEMORY (the event stays first in line).
 */
tw_result tw_client_poll(tw_handle client, tw_event *event, void *buf, size_t cap);

/*
 * Queues a message of size bytes for the server; it leaves with the
 * client's next tick's packet (tw_client_flush sends it at once). The
 * library copies data before returning. data may be NULL when size is 0.
 * delivery is a TW_DELIVERY_*; channel is the application's (0..255).
 *
 * Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND,
 * TW_ERR_INVALID_ARGUMENT (bad delivery, data NULL with size > 0),
 * TW_ERR_NOT_CONNECTED, TW_ERR_MESSAGE_TOO_LARGE, TW_ERR_QUEUE_FULL.
 */
tw_result tw_client_send(tw_handle client, uint32_t delivery, uint8_t channel, const void *data,
                         size_t size);

/*
 * tw_client_send with a tick postmark: the server's application is told
 * the tick at which the client meant the message (its game runs it at
 * that tick). Same errors.
 */
tw_result tw_client_send_at(tw_handle client, uint32_t delivery, uint8_t channel, uint32_t tick,
                            const void *data, size_t size);

/*
 * Sends the queued messages now rather than with the next tick's packet:
 * send then flush is the no-delay send, for chat or RPCs whose latency
 * matters more than packing. Errors: TW_ERR_INVALID_HANDLE,
 * TW_ERR_WRONG_KIND, TW_ERR_NOT_CONNECTED.
 */
tw_result tw_client_flush(tw_handle client);

/*
 * The client's state, TW_STATE_*, as of its last tw_client_update (so
 * that it agrees with the events polled), or a negative TW_ERR_* code
 * (TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND).
 */
int32_t tw_client_state(tw_handle client);

/*
 * Fills *info with what the server's accept said. Errors:
 * TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND, TW_ERR_INVALID_ARGUMENT
 * (info NULL), TW_ERR_NOT_CONNECTED (no accept yet, or the connection
 * never opened).
 */
tw_result tw_client_info(tw_handle client, tw_accept_info *info);

/*
 * Fills *stats with the connection's counters and estimates; after the
 * end, their final values. Same errors as tw_client_info.
 */
tw_result tw_client_stats(tw_handle client, tw_stats *stats);

/*
 * Starts closing the client; returns at once. A connected client sends
 * what it queued once more, tells the server it is leaving, and ends
 * with TW_EVENT_DISCONNECTED, reason TW_DISCONNECT_CLOSED, within about
 * a tick; a connecting client gives up the same way. Closing a client
 * that is closing or ended does nothing. Errors: TW_ERR_INVALID_HANDLE,
 * TW_ERR_WRONG_KIND.
 */
tw_result tw_client_close(tw_handle client);

/*
 * Closes the client (as tw_client_close) if it is open, waits until the
 * library's threads let go of it (at most about a tick), and releases
 * the handle: from then on it names nothing. Events not polled are
 * dropped; owned messages already polled stay the caller's. Errors:
 * TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND.
 */
tw_result tw_client_free(tw_handle client);

/* ---- Commits mode ------------------------------------------------------
 *
 * The commits mode (docs/COMMITS.md) replicates commands, not state: a
 * server (tickwire-server -game relay, which runs no game code) orders
 * every player's commands by tick and commits a tick once every client
 * reached it; each client steps its own copy of the deterministic world
 * through the committed ticks. Here the game steps that world itself,
 * in its own language, and the library does the rest: the connection,
 * the commit, the clock and lead, the checksums' trip to the server, the
 * state transfers, the mesh.
 *
 * The game is lockstep: it steps the committed world only, tick by tick,
 * as the events say, and shows it. It sees a command once the server
 * committed its tick: lead ticks (tw_commits_info) after it was issued
 * plus the time the slowest client takes to reach that tick (about a
 * round trip). The library keeps no live world the game can read (the
 * Go commits.Client's predicted world, which rolls back): that would
 * need the game's step run by the library, which calls no code of the
 * caller's. For the same reason the library validates no command: every
 * TW_COMMAND_INPUT comes as issued, and the game's rules decide, as it
 * steps, what it does. A command the game refuses is the game's to
 * report to its player (the Go commits.Client's Rejected callback, which
 * runs the game's ValidateAction, has no event here): the player's own
 * commands are those whose player is the connection's slot.
 *
 * What the game provides, for the relay to compare clients and to hand
 * states to joiners:
 *   - after each TW_EVENT_COMMITS_TICK, tw_commits_sum: a 64-bit
 *     checksum of its committed world after that tick. Every client's
 *     game must compute the same function of the same state (FNV-1a 64
 *     of the canonical bytes, as the Go games do, is a good choice).
 *     The relay compares each tick's sums across clients and resyncs a
 *     client that differs from the majority (TW_EVENT_COMMITS_DESYNC).
 *   - on TW_EVENT_COMMITS_STATE_REQUEST, tw_commits_state: the
 *     canonical bytes of its committed world after the tick asked
 *     (equal on every client whose world is equal). The library adds
 *     the tick and the players present, takes the SHA-256 of the whole
 *     for the relay, which compares it with other clients' and has one
 *     of them upload its bytes to a joining or resynchronised client.
 *   - on TW_EVENT_COMMITS_STATE, it replaces its world with the bytes
 *     (size 0: its blank world), at the event's tick; the next TICK is
 *     tick + 1.
 *
 * A frame: tw_commits_update(h, now), then tw_commits_poll until
 * TW_EVENT_NONE: on STATE load, on COMMAND remember, on TICK step with
 * what was remembered and tw_commits_sum, on STATE_REQUEST
 * tw_commits_state; tw_commits_issue the player's commands at any time.
 * Nothing calls back; the library's threads never wait for the game. A
 * game that stops polling falls behind: the server takes it out of the
 * commit after its buffer (1 s by default) and lets it back in with a
 * fresh state (TW_EVENT_COMMITS_KICKED, then a STATE with
 * TW_EVENT_RESYNC). Events wait for the game without a bound (the
 * server's kick bounds them).
 *
 * A commits client is a handle of its own kind: the tw_client_*
 * functions refuse it (TW_ERR_WRONG_KIND) and tw_commits_* refuse a
 * transport client. Threads, handles and tw_last_error are as above.
 */

/*
 * Options of a commits client. 96 bytes. A zeroed struct is no valid
 * config: input_size is required.
 */
typedef struct tw_commits_config {
	/* The connection's options, as tw_client_create's. */
	tw_client_config transport;
	/* The size in bytes of every command of the game, 1..341: the
	 * relay refuses commands of another size (tickwire-server's
	 * -relay-input-size, or the first command of the game). */
	uint32_t input_size;
	/* Nonzero: take part in the mesh (docs/COMMITS.md): commands also
	 * go straight to the peers the client reaches. With a lockstep
	 * game they only speed up nothing: the committed world waits for
	 * the server anyway. It is here for completeness. */
	uint32_t mesh;
	/* The command buffer in ticks past the committed tick; 0: 8 s of
	 * the server's ticks. At most 65,536. */
	uint32_t capacity_ticks;
	uint32_t reserved0;
	uint64_t reserved[4];
} tw_commits_config;

/* What a commits client knows of its game (tw_commits_info). 80 bytes. */
typedef struct tw_commit_info {
	tw_accept_info accept; /* the server's accept (tw_client_info) */
	uint32_t committed;    /* the library's committed tick (ahead of the game's until it polled) */
	uint32_t has_state;    /* nonzero once a state arrived: commands may be issued */
	uint32_t lead;         /* ticks ahead of the present a command is scheduled (the server's lead) */
	uint32_t reserved0;
	double server_tick;    /* the estimate of the server's tick now (fractional): the present */
	uint64_t reserved[2];
} tw_commit_info;

/* A commits client's counters (tw_commits_stats). 128 bytes. */
typedef struct tw_commit_stats {
	uint64_t issued;          /* commands issued (tw_commits_issue) */
	uint64_t commands;        /* TW_EVENT_COMMITS_COMMAND events made pollable */
	uint64_t ticks;           /* TW_EVENT_COMMITS_TICK events made pollable */
	uint64_t sums_reported;   /* tw_commits_sum calls taken */
	uint64_t sums_sent;       /* checksums sent to the server */
	uint64_t state_requests;  /* the relay's requests for the committed state */
	uint64_t states_uploaded; /* states uploaded to the relay */
	uint64_t states_loaded;   /* TW_EVENT_COMMITS_STATE events */
	uint64_t kicks;           /* times taken out of the commit */
	uint64_t desyncs;         /* resyncs for a differing checksum */
	double stall_max_ms;      /* the longest time the committed tick did not move */
	uint64_t reserved[5];
} tw_commit_stats;

/*
 * Creates a commits client and starts connecting; returns at once.
 * token, server_addr and out are as tw_client_create's; config is
 * required (its input_size). The game connects to a commits-mode server:
 * tickwire-server -game relay.
 *
 * Errors: TW_ERR_ABI_VERSION, TW_ERR_INVALID_ARGUMENT (a NULL token,
 * config or out, a string with no NUL within 8 KiB, input_size out of
 * 1..341, capacity_ticks over 65,536), TW_ERR_BAD_TOKEN. They leave the
 * process-wide message (tw_last_error(0, ...)). The connection's outcome
 * comes as tw_client_create's does: TW_EVENT_CONNECTED, then the first
 * TW_EVENT_COMMITS_STATE; or TW_EVENT_DISCONNECTED.
 */
tw_result tw_commits_create(uint32_t abi_version, const char *token, const char *server_addr,
                            const tw_commits_config *config, tw_handle *out);

/*
 * Makes what happened since the last update pollable, in order: the
 * connect or its failure, messages, the commits events, kicks and
 * desyncs, the disconnect (last). now as tw_client_update's. Errors:
 * TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND, TW_ERR_INVALID_ARGUMENT
 * (now not finite).
 */
tw_result tw_commits_update(tw_handle commits, double now);

/*
 * Takes the next pollable event, as tw_client_poll: data (a state's
 * bytes, a command's) goes into buf (cap bytes) or, buf NULL, into
 * memory the caller owns (TW_EVENT_OWNED, tw_free). A state can be
 * large: poll with buf NULL, or retry with event.size bytes after
 * TW_ERR_BUFFER_TOO_SMALL (the event stays first). Errors:
 * TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND, TW_ERR_INVALID_ARGUMENT
 * (event NULL), TW_ERR_BUFFER_TOO_SMALL, TW_ERR_NO_MEMORY.
 */
tw_result tw_commits_poll(tw_handle commits, tw_event *event, void *buf, size_t cap);

/*
 * Issues a command of the connection's (first) player: size must be
 * config.input_size. The library copies data, sends it to the server,
 * reliably, and returns once the client's thread took it (well under a
 * millisecond on an idle machine, more under load: issue from the game
 * thread a few commands a frame, not thousands); *tick (tick may be
 * NULL) receives the tick it is scheduled at: lead ticks ahead of the
 * present. The server may move a command that reached it late to a
 * later tick: the TW_EVENT_COMMITS_COMMAND that runs it says where it
 * ran (each issued command runs once, at the same tick on every
 * client). The commands of a tick are those of the players present:
 * issue once the player's TW_COMMAND_JOIN has run (a command scheduled
 * before it runs nowhere, and no event says so).
 *
 * Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND,
 * TW_ERR_INVALID_ARGUMENT (data NULL, size not input_size),
 * TW_ERR_NOT_CONNECTED (connecting, no state yet, or ended),
 * TW_ERR_QUEUE_FULL (the command buffer or the send queue is full:
 * the game is far ahead of the commit; retry later).
 */
tw_result tw_commits_issue(tw_handle commits, const void *data, size_t size, uint32_t *tick);

/*
 * Reports the checksum of the game's committed world after tick (the
 * TW_EVENT_COMMITS_TICK just stepped); the library sends it to the
 * server once every tick of its window (one second of ticks) has one.
 * The last 4096 ticks are kept; reporting a tick again replaces its sum.
 * A tick not reported holds back the sums after it: report every tick.
 * Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND.
 */
tw_result tw_commits_sum(tw_handle commits, uint32_t tick, uint64_t sum);

/*
 * Answers TW_EVENT_COMMITS_STATE_REQUEST: the canonical bytes of the
 * game's committed world after tick (what TW_EVENT_COMMITS_STATE hands
 * another client's game to load). The library copies them during the
 * call and answers the relay at its next tick. An answer for a tick no
 * longer asked is kept until another is given, and unused. data may be
 * NULL when size is 0 (the world is its blank self).
 *
 * Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND,
 * TW_ERR_INVALID_ARGUMENT (data NULL with size > 0),
 * TW_ERR_MESSAGE_TOO_LARGE (over 16 MiB less the library's head, or the
 * server's -relay-max-state, which refuses the upload: the server then
 * asks another client).
 */
tw_result tw_commits_state(tw_handle commits, uint32_t tick, const void *data, size_t size);

/*
 * The client's TW_STATE_* as of its last update, or a negative TW_ERR_*
 * (TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND).
 */
int32_t tw_commits_conn_state(tw_handle commits);

/*
 * Fills *info. Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND,
 * TW_ERR_INVALID_ARGUMENT (info NULL), TW_ERR_NOT_CONNECTED (no accept
 * yet, or the connection never opened).
 */
tw_result tw_commits_info(tw_handle commits, tw_commit_info *info);

/*
 * Fills *stats (counters of the client's whole life); the connection's
 * own counters are tw_client_stats's, which tw_commits_transport_stats
 * fills. Errors: TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND,
 * TW_ERR_INVALID_ARGUMENT (stats NULL).
 */
tw_result tw_commits_stats(tw_handle commits, tw_commit_stats *stats);
tw_result tw_commits_transport_stats(tw_handle commits, tw_stats *stats);

/*
 * Starts closing, as tw_client_close; the end comes as
 * TW_EVENT_DISCONNECTED. Errors: TW_ERR_INVALID_HANDLE,
 * TW_ERR_WRONG_KIND.
 */
tw_result tw_commits_close(tw_handle commits);

/*
 * Closes the client if it is open, waits until the library's threads
 * let go of it, and releases the handle, as tw_client_free. Errors:
 * TW_ERR_INVALID_HANDLE, TW_ERR_WRONG_KIND.
 */
tw_result tw_commits_free(tw_handle commits);

#ifdef __cplusplus
}
#endif

#endif /* TICKWIRE_H */
