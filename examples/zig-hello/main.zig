// zig-hello: Zig calling tickwire through its C ABI. It @cImports
// capi/tickwire.h, links libtickwire.a (the Go engine as a C archive),
// checks the library's ABI version against the header's, and shows that
// a bad token is an error code. Given a connect token for a server that
// echoes messages, it also connects, sends one reliable message and
// waits for its echo.
//
//     go build -buildmode=c-archive -o libtickwire.a ./capi
//     zig=$(scripts/install-zig.sh)
//     $zig build-exe examples/zig-hello/main.zig -I capi libtickwire.a -lc -femit-bin=zig-hello
//     ./zig-hello [TOKEN]
const std = @import("std");
const tw = @cImport({
    @cInclude("tickwire.h");
});

pub fn main() !u8 {
    const out = std.io.getStdOut().writer();
    const version = tw.tw_abi_version();
    try out.print("tickwire ABI version {d}, header {d}\n", .{ version, tw.TW_ABI_VERSION });
    if (version != tw.TW_ABI_VERSION) return 1;

    var client: tw.tw_handle = 0;
    var msg: [256]u8 = undefined;
    var rc = tw.tw_client_create(tw.TW_ABI_VERSION, "not a token", null, null, &client);
    try out.print("a bad token: {s}: {s}\n", .{ std.mem.span(tw.tw_result_string(rc)), lastError(0, &msg) });
    if (rc != tw.TW_ERR_BAD_TOKEN) return 1;

    var args = std.process.args();
    _ = args.skip();
    const token = args.next() orelse return 0;

    rc = tw.tw_client_create(tw.TW_ABI_VERSION, token.ptr, null, null, &client);
    if (rc != tw.TW_OK) {
        try out.print("create: {s}\n", .{lastError(0, &msg)});
        return 1;
    }
    defer _ = tw.tw_client_free(client);

    const hello = "hello from zig";
    var buf: [256]u8 = undefined;
    var timer = try std.time.Timer.start();
    while (timer.read() < 30 * std.time.ns_per_s) : (std.time.sleep(std.time.ns_per_ms)) {
        _ = tw.tw_client_update(client, @as(f64, @floatFromInt(timer.read())) / std.time.ns_per_s);
        var ev: tw.tw_event = undefined;
        while (tw.tw_client_poll(client, &ev, &buf, buf.len) == tw.TW_OK and ev.kind != tw.TW_EVENT_NONE) {
            switch (ev.kind) {
                tw.TW_EVENT_CONNECTED => {
                    try out.print("connected\n", .{});
                    if (tw.tw_client_send(client, tw.TW_DELIVERY_RELIABLE, 1, hello, hello.len) != tw.TW_OK) return 1;
                },
                tw.TW_EVENT_MESSAGE => {
                    const data = ev.data[0..ev.size];
                    try out.print("echo: {s}\n", .{data});
                    return if (std.mem.eql(u8, data, hello)) 0 else 1;
                },
                tw.TW_EVENT_DISCONNECTED => {
                    try out.print("disconnected: {s}: {s}\n", .{ std.mem.span(tw.tw_disconnect_string(ev.reason)), lastError(client, &msg) });
                    return 1;
                },
                else => {},
            }
        }
    }
    try out.print("no echo within 30 s\n", .{});
    return 1;
}

// lastError is tw_last_error(handle) in buf.
fn lastError(handle: tw.tw_handle, buf: []u8) []const u8 {
    const n = tw.tw_last_error(handle, buf.ptr, buf.len);
    return buf[0..@min(n, buf.len - 1)];
}
