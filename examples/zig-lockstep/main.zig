// zig-lockstep: a deterministic game in Zig that plays tickwire's commits
// mode through the C ABI (capi/tickwire.h), headless. It steps its own
// committed world tick by tick as the library's events say (lockstep: it
// shows only committed ticks), reports each tick's checksum, answers the
// relay's requests for its state and loads the states the relay sends.
//
// The world: every player present owns four units that walk, in integer
// steps, to their targets; a unit that arrives scores and picks its next
// target from the world's random generator (a 64-bit xorshift, part of
// the state). A command moves one of the player's units: 8 bytes, the
// kind (1), the unit, a tag (the client's count of its commands, LE u16)
// and the target (x, y: LE i16).
//
//     go build -buildmode=c-archive -o libtickwire.a ./capi
//     zig=$(scripts/install-zig.sh)
//     $zig build-exe examples/zig-lockstep/main.zig -I capi libtickwire.a -lc -femit-bin=zig-lockstep
//     tickwire-server -game relay -dev-join -tick 30 &
//     ./zig-lockstep -token "$(curl -s -XPOST localhost:8080/api/join | jq -r .token)" -duration 10 -json
//
// Flags: -token TOKEN (required), -server HOST:PORT (send there instead
// of the token's addresses), -duration SECONDS (default 10), -every MS
// between commands (default 100), -seed N, -record FILE (a line per
// committed tick "T tick sum", per command run "C tick player tag", per
// command issued "I player tag tick", per state loaded "L tick size
// resync"), -json (the summary as JSON on stdout), -timeout MS (the
// connection's, default the library's).
const std = @import("std");
const tw = @cImport({
    @cInclude("tickwire.h");
});

const units_per_player = 4;
const input_size = 8;
const arena = 1000; // coordinates in 0..arena
const speed = 7; // per tick

const Unit = struct { x: i32, y: i32, tx: i32, ty: i32, score: u32 };

const Player = struct {
    id: u16,
    units: [units_per_player]Unit,
};

// World is the committed world: the players by id, ascending, and the
// random generator's state.
const World = struct {
    players: std.ArrayList(Player),
    rng: u64,

    const blank_rng: u64 = 0x9E3779B97F4A7C15;

    fn init(alloc: std.mem.Allocator) World {
        return .{ .players = std.ArrayList(Player).init(alloc), .rng = blank_rng };
    }

    fn reset(w: *World) void {
        w.players.clearRetainingCapacity();
        w.rng = blank_rng;
    }

    fn next(w: *World) u64 {
        var x = w.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.rng = x;
        return x;
    }

    fn find(w: *World, id: u16) ?*Player {
        for (w.players.items) |*p| {
            if (p.id == id) return p;
        }
        return null;
    }

    fn join(w: *World, id: u16) !void {
        if (w.find(id) != null) return;
        var p = Player{ .id = id, .units = undefined };
        for (&p.units, 0..) |*u, i| {
            const c: i32 = @intCast((@as(u32, id) * 97 + @as(u32, @intCast(i)) * 211) % arena);
            u.* = .{ .x = c, .y = arena - c, .tx = c, .ty = c, .score = 0 };
        }
        var at: usize = 0;
        while (at < w.players.items.len and w.players.items[at].id < id) at += 1;
        try w.players.insert(at, p);
    }

    fn leave(w: *World, id: u16) void {
        for (w.players.items, 0..) |p, i| {
            if (p.id == id) {
                _ = w.players.orderedRemove(i);
                return;
            }
        }
    }

    // command applies a move command of player (before the tick's step).
    fn command(w: *World, player: u16, c: []const u8) void {
        if (c.len != input_size or c[0] != 1) return;
        const p = w.find(player) orelse return;
        const u = &p.units[c[1] % units_per_player];
        u.tx = std.math.clamp(@as(i32, std.mem.readIntLittle(i16, c[4..6])), 0, arena);
        u.ty = std.math.clamp(@as(i32, std.mem.readIntLittle(i16, c[6..8])), 0, arena);
    }

    fn step(w: *World) void {
        for (w.players.items) |*p| {
            for (&p.units) |*u| {
                u.x += std.math.clamp(u.tx - u.x, -speed, speed);
                u.y += std.math.clamp(u.ty - u.y, -speed, speed);
                if (u.x == u.tx and u.y == u.ty) {
                    u.score += 1;
                    u.tx = @intCast(w.next() % (arena + 1));
                    u.ty = @intCast(w.next() % (arena + 1));
                }
            }
        }
    }

    // canonical appends the world's canonical bytes: rng (u64), the
    // player count (u16), then per player its id (u16) and per unit x,
    // y, tx, ty (i32) and score (u32); all little-endian.
    fn canonical(w: *World, out: *std.ArrayList(u8)) !void {
        out.clearRetainingCapacity();
        const wr = out.writer();
        try wr.writeIntLittle(u64, w.rng);
        try wr.writeIntLittle(u16, @as(u16, @intCast(w.players.items.len)));
        for (w.players.items) |p| {
            try wr.writeIntLittle(u16, p.id);
            for (p.units) |u| {
                try wr.writeIntLittle(i32, u.x);
                try wr.writeIntLittle(i32, u.y);
                try wr.writeIntLittle(i32, u.tx);
                try wr.writeIntLittle(i32, u.ty);
                try wr.writeIntLittle(u32, u.score);
            }
        }
    }

    // load replaces the world with canonical bytes (empty: the blank
    // world); false when they do not parse.
    fn load(w: *World, b: []const u8) !bool {
        w.reset();
        if (b.len == 0) return true;
        const per = 2 + units_per_player * 20;
        if (b.len < 10) return false;
        const n = std.mem.readIntLittle(u16, b[8..10]);
        if (b.len != 10 + @as(usize, n) * per) return false;
        w.rng = std.mem.readIntLittle(u64, b[0..8]);
        var off: usize = 10;
        var i: usize = 0;
        while (i < n) : (i += 1) {
            var p = Player{ .id = std.mem.readIntLittle(u16, b[off..][0..2]), .units = undefined };
            off += 2;
            for (&p.units) |*u| {
                u.x = std.mem.readIntLittle(i32, b[off..][0..4]);
                u.y = std.mem.readIntLittle(i32, b[off + 4 ..][0..4]);
                u.tx = std.mem.readIntLittle(i32, b[off + 8 ..][0..4]);
                u.ty = std.mem.readIntLittle(i32, b[off + 12 ..][0..4]);
                u.score = std.mem.readIntLittle(u32, b[off + 16 ..][0..4]);
                off += 20;
            }
            try w.players.append(p);
        }
        return true;
    }
};

// fnv1a is FNV-1a 64, the checksum the Go games use (sim.Checksummer).
fn fnv1a(h0: u64, b: []const u8) u64 {
    var h = h0;
    for (b) |c| {
        h ^= c;
        h *%= 1099511628211;
    }
    return h;
}
const fnv_offset: u64 = 14695981039346656037;

const Pending = struct { kind: u32, player: u16, tag: u16, data: [input_size]u8 };

const Summary = struct {
    player: u32 = 0,
    first_tick: u32 = 0,
    last_tick: u32 = 0,
    ticks_committed: u64 = 0,
    commands_issued: u64 = 0,
    issue_refused: u64 = 0,
    commands_run: u64 = 0,
    own_commands_run: u64 = 0,
    sums_reported: u64 = 0,
    sums_sent: u64 = 0,
    state_requests: u64 = 0,
    states_answered: u64 = 0,
    states_uploaded: u64 = 0,
    states_loaded: u64 = 0,
    resyncs: u64 = 0,
    kicks: u64 = 0,
    desyncs: u64 = 0,
    first_state_ms: f64 = -1,
    last_state_ms: f64 = -1,
    last_state_bytes: u64 = 0,
    stall_max_ms: f64 = 0,
    record_hash: u64 = fnv_offset,
    disconnect: []const u8 = "",
};

pub fn main() !u8 {
    var gpa = std.heap.GeneralPurposeAllocator(.{}){};
    const alloc = gpa.allocator();
    const args = try std.process.argsAlloc(alloc);
    defer std.process.argsFree(alloc, args);

    var token: ?[:0]const u8 = null;
    var server: ?[:0]const u8 = null;
    var record_path: ?[]const u8 = null;
    var duration: f64 = 10;
    var every_ms: f64 = 100;
    var seed: u64 = 1;
    var json = false;
    var timeout_ms: u32 = 0;
    var i: usize = 1;
    while (i < args.len) : (i += 1) {
        const a = args[i];
        if (std.mem.eql(u8, a, "-json")) {
            json = true;
            continue;
        }
        if (i + 1 >= args.len) return usage();
        const v = args[i + 1];
        i += 1;
        if (std.mem.eql(u8, a, "-token")) {
            token = v;
        } else if (std.mem.eql(u8, a, "-server")) {
            server = v;
        } else if (std.mem.eql(u8, a, "-record")) {
            record_path = v;
        } else if (std.mem.eql(u8, a, "-duration")) {
            duration = try std.fmt.parseFloat(f64, v);
        } else if (std.mem.eql(u8, a, "-every")) {
            every_ms = try std.fmt.parseFloat(f64, v);
        } else if (std.mem.eql(u8, a, "-seed")) {
            seed = try std.fmt.parseInt(u64, v, 10);
        } else if (std.mem.eql(u8, a, "-timeout")) {
            timeout_ms = try std.fmt.parseInt(u32, v, 10);
        } else return usage();
    }
    const tok = token orelse return usage();

    const stderr = std.io.getStdErr().writer();
    var record_file: ?std.fs.File = null;
    if (record_path) |p| record_file = try std.fs.cwd().createFile(p, .{});
    defer if (record_file) |f| f.close();
    var rec = RecordWriter{ .file = record_file };
    defer rec.flush();

    var cfg = std.mem.zeroes(tw.tw_commits_config);
    cfg.input_size = input_size;
    cfg.transport.timeout_ms = timeout_ms;
    var h: tw.tw_handle = 0;
    var msg: [512]u8 = undefined;
    if (tw.tw_commits_create(tw.TW_ABI_VERSION, tok.ptr, if (server) |s| s.ptr else null, &cfg, &h) != tw.TW_OK) {
        try stderr.print("zig-lockstep: create: {s}\n", .{lastError(0, &msg)});
        return 1;
    }
    defer _ = tw.tw_commits_free(h);

    var world = World.init(alloc);
    var scratch = std.ArrayList(u8).init(alloc);
    var pending = std.ArrayList(Pending).init(alloc);
    const buf = try alloc.alloc(u8, 1 << 20);
    defer alloc.free(buf);

    var sum = Summary{};
    var tick: u32 = 0; // the world's committed tick
    var have = false; // a state was loaded
    var player: u16 = 0;
    var tag: u16 = 0;
    var ended = false;
    var closing = false;
    var rng = std.rand.DefaultPrng.init(seed);
    var timer = try std.time.Timer.start();
    var next_issue: f64 = 0;

    while (!ended) : (std.time.sleep(4 * std.time.ns_per_ms)) {
        const now = @as(f64, @floatFromInt(timer.read())) / std.time.ns_per_s;
        if (!closing and now >= duration) {
            closing = true;
            _ = tw.tw_commits_close(h);
        }
        if (now >= duration + 10) break;
        _ = tw.tw_commits_update(h, now);
        while (true) {
            var ev: tw.tw_event = undefined;
            var rc = tw.tw_commits_poll(h, &ev, buf.ptr, buf.len);
            if (rc == tw.TW_ERR_BUFFER_TOO_SMALL) rc = tw.tw_commits_poll(h, &ev, null, 0);
            if (rc != tw.TW_OK) {
                try stderr.print("zig-lockstep: poll: {s}\n", .{lastError(h, &msg)});
                return 1;
            }
            if (ev.kind == tw.TW_EVENT_NONE) break;
            defer if (ev.flags & tw.TW_EVENT_OWNED != 0) tw.tw_free(ev.data);
            const data: []const u8 = if (ev.size > 0) ev.data[0..ev.size] else &[_]u8{};
            switch (ev.kind) {
                tw.TW_EVENT_CONNECTED => {
                    var info: tw.tw_commit_info = undefined;
                    if (tw.tw_commits_info(h, &info) == tw.TW_OK and info.accept.player_count > 0) {
                        player = info.accept.players[0];
                        sum.player = player;
                    }
                },
                tw.TW_EVENT_COMMITS_STATE => {
                    if (!try world.load(data)) {
                        try stderr.print("zig-lockstep: a state of {d} bytes does not parse\n", .{data.len});
                        return 1;
                    }
                    tick = ev.tick;
                    pending.clearRetainingCapacity();
                    if (!have) sum.first_tick = tick + 1;
                    have = true;
                    sum.states_loaded += 1;
                    if (ev.flags & tw.TW_EVENT_RESYNC != 0) sum.resyncs += 1;
                    const ms = now * 1000;
                    if (sum.first_state_ms < 0) sum.first_state_ms = ms;
                    sum.last_state_ms = ms;
                    sum.last_state_bytes = data.len;
                    try rec.print("L {d} {d} {d}\n", .{ tick, data.len, @intFromBool(ev.flags & tw.TW_EVENT_RESYNC != 0) });
                },
                tw.TW_EVENT_COMMITS_COMMAND => {
                    var p = Pending{ .kind = ev.command, .player = @intCast(ev.player), .tag = 0, .data = std.mem.zeroes([input_size]u8) };
                    if (ev.command == tw.TW_COMMAND_INPUT and data.len == input_size) {
                        @memcpy(&p.data, data);
                        p.tag = std.mem.readIntLittle(u16, data[2..4]);
                    }
                    try pending.append(p);
                },
                tw.TW_EVENT_COMMITS_TICK => {
                    if (ev.tick != tick +% 1) {
                        try stderr.print("zig-lockstep: tick {d} after {d}\n", .{ ev.tick, tick });
                        return 1;
                    }
                    tick = ev.tick;
                    for (pending.items) |p| {
                        switch (p.kind) {
                            tw.TW_COMMAND_JOIN => try world.join(p.player),
                            tw.TW_COMMAND_LEAVE => world.leave(p.player),
                            else => {
                                world.command(p.player, &p.data);
                                sum.commands_run += 1;
                                if (p.player == player) sum.own_commands_run += 1;
                                try rec.print("C {d} {d} {d}\n", .{ tick, p.player, p.tag });
                            },
                        }
                    }
                    pending.clearRetainingCapacity();
                    world.step();
                    try world.canonical(&scratch);
                    const s = fnv1a(fnv_offset, scratch.items);
                    _ = tw.tw_commits_sum(h, tick, s);
                    sum.sums_reported += 1;
                    sum.ticks_committed += 1;
                    sum.last_tick = tick;
                    var pair: [12]u8 = undefined;
                    std.mem.writeIntLittle(u32, pair[0..4], tick);
                    std.mem.writeIntLittle(u64, pair[4..12], s);
                    sum.record_hash = fnv1a(sum.record_hash, &pair);
                    try rec.print("T {d} {x:0>16}\n", .{ tick, s });
                },
                tw.TW_EVENT_COMMITS_STATE_REQUEST => {
                    sum.state_requests += 1;
                    if (ev.tick == tick) {
                        try world.canonical(&scratch);
                        if (tw.tw_commits_state(h, tick, scratch.items.ptr, scratch.items.len) == tw.TW_OK) sum.states_answered += 1;
                    }
                },
                tw.TW_EVENT_COMMITS_KICKED => sum.kicks = ev.detail,
                tw.TW_EVENT_COMMITS_DESYNC => sum.desyncs = ev.detail,
                tw.TW_EVENT_DISCONNECTED => {
                    sum.disconnect = std.mem.span(tw.tw_disconnect_string(ev.reason));
                    if (!closing) try stderr.print("zig-lockstep: disconnected: {s}: {s}\n", .{ sum.disconnect, lastError(h, &msg) });
                    ended = true;
                },
                else => {},
            }
        }
        // The player's commands, every -every ms once it is in the
        // committed world: a command for a tick before the player's
        // join runs nowhere (the world steps the players present).
        if (have and !closing and now >= next_issue and world.find(player) != null) {
            next_issue = now + every_ms / 1000;
            var cmd: [input_size]u8 = undefined;
            cmd[0] = 1;
            cmd[1] = rng.random().int(u8);
            std.mem.writeIntLittle(u16, cmd[2..4], tag +% 1);
            std.mem.writeIntLittle(i16, cmd[4..6], rng.random().intRangeAtMost(i16, 0, arena));
            std.mem.writeIntLittle(i16, cmd[6..8], rng.random().intRangeAtMost(i16, 0, arena));
            var at: u32 = 0;
            if (tw.tw_commits_issue(h, &cmd, cmd.len, &at) == tw.TW_OK) {
                tag +%= 1;
                sum.commands_issued += 1;
                try rec.print("I {d} {d} {d}\n", .{ player, tag, at });
            } else {
                sum.issue_refused += 1;
            }
        }
    }

    var st: tw.tw_commit_stats = undefined;
    if (tw.tw_commits_stats(h, &st) == tw.TW_OK) {
        sum.sums_sent = st.sums_sent;
        sum.states_uploaded = st.states_uploaded;
        sum.stall_max_ms = st.stall_max_ms;
        sum.kicks = st.kicks;
        sum.desyncs = st.desyncs;
    }
    rec.flush();
    const out = std.io.getStdOut().writer();
    if (json) {
        try std.json.stringify(sum, .{}, out);
        try out.writeByte('\n');
    } else {
        try out.print("player {d}: ticks {d}..{d} ({d} committed), {d} commands issued, {d} run ({d} own), {d} sums, {d} states loaded ({d} resyncs, {d} kicks, {d} desyncs), {d} uploaded\n", .{ sum.player, sum.first_tick, sum.last_tick, sum.ticks_committed, sum.commands_issued, sum.commands_run, sum.own_commands_run, sum.sums_sent, sum.states_loaded, sum.resyncs, sum.kicks, sum.desyncs, sum.states_uploaded });
    }
    return if (have) 0 else 1;
}

// RecordWriter writes the -record lines through a buffer (nothing
// without -record).
const RecordWriter = struct {
    file: ?std.fs.File,
    buf: [64 << 10]u8 = undefined,
    n: usize = 0,

    fn print(r: *RecordWriter, comptime fmt: []const u8, args: anytype) !void {
        if (r.file == null) return;
        if (r.n + 128 > r.buf.len) r.flush();
        const s = try std.fmt.bufPrint(r.buf[r.n..], fmt, args);
        r.n += s.len;
    }

    fn flush(r: *RecordWriter) void {
        if (r.file) |f| f.writeAll(r.buf[0..r.n]) catch {};
        r.n = 0;
    }
};

fn usage() u8 {
    std.io.getStdErr().writer().print("usage: zig-lockstep -token TOKEN [-server HOST:PORT] [-duration S] [-every MS] [-seed N] [-record FILE] [-timeout MS] [-json]\n", .{}) catch {};
    return 2;
}

// lastError is tw_last_error(handle) in buf.
fn lastError(handle: tw.tw_handle, buf: []u8) []const u8 {
    const n = tw.tw_last_error(handle, buf.ptr, buf.len);
    return buf[0..@min(n, buf.len - 1)];
}
