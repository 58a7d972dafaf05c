-- tickwire.lua: Wireshark dissector for the tickwire game protocol.
--
-- Byte layout: docs/PROTOCOL.md. Encoder: package proto. TestDissectorAgrees
-- (proto/dissector_test.go) proves the two agree field by field.
--
-- Use:  wireshark -X lua_script:proto/wireshark/tickwire.lua capture.pcap
--       tshark    -X lua_script:proto/wireshark/tickwire.lua -r capture.pcap -V
-- or copy this file into your personal plugins folder.
--
-- Registered on UDP port 7777 and as a heuristic dissector on every UDP port
-- (it claims datagrams that start with 't' 'w', version 3 and a known type).
-- A second protocol, tickwire_relay, dissects the relay's control packets
-- ('R' 'w', version 1: docs/PROTOCOL.md, "Relay control packets"), claimed
-- by a heuristic of its own.
-- Malformed packets get expert info "tickwire.malformed"; sealed (encrypted)
-- payloads are shown as bytes, the header always dissects.
--
-- Decryption: set the preference "Key log file" (tickwire.keylog_file) to a
-- key log that TICKWIRE_KEYLOG wrote (docs/PROTOCOL.md, "Key log";
-- docs/DEBUGGING.md). A sealed packet whose connection has a key there that
-- verifies its AES-256-GCM tag is decrypted and its frames shown as those of
-- a plaintext packet; one that no key opens gets the expert info
-- "tickwire.undecryptable". AES and GHASH are implemented below in Lua.

local VERSION = 3
local PREFIX_SIZE = 4
local HEADER_SIZE = 26
local SEAL_OVERHEAD = 16
local COOKIE_SIZE = 192
local RANDOM_SIZE = 16
local TOKEN_SEALED_SIZE = 192
local REQUEST_SIZE = 256
-- Connection request offsets.
local REQ_KEY_ID = 4
local REQ_GAME_ID = 8
local REQ_EXPIRES = 16
local REQ_NONCE = 24
local REQ_TOKEN = 36
local NONCE_SIZE = 12
-- Denied: reason, then (sealed form) counter and tag.
local DENIED_SIZE = 5
local DENIED_TAG = 13
local DENIED_SEALED_SIZE = DENIED_TAG + SEAL_OVERHEAD
local MAX_DENY_DETAIL = 2 + 64
local MAX_FRAMES = 64
local MAX_INPUTS = 32
local MAX_INPUT_BYTES = 1024
local MAX_PACKET = 1472
local MAX_SNAPSHOT = 16 * 1024 * 1024
local MAX_CONTROL_TEXT = 255
local MAX_ROSTER_MEMBERS = 64
local MAX_STANDBY_MESSAGES = 1024
local MAX_STANDBY_SNAPSHOTS = 64
local MAX_SUCCESSOR_TOKEN = 2048
local KEY_SIZE = 32
local MAX_INPUT_SIZE = 1024
local MAX_MESSAGE = 1048576
local MAX_COMMIT_SUMS = 64
local MAX_STATE = 16 * 1024 * 1024
local MAX_STATE_CHUNK = 16 * 1024
local STATE_SUM_SIZE = 32
local MAX_MESH_REPORT = 64
local MAX_PARITY_MEMBERS, MAX_PARITY_SHARDS = 16, 8
local MAX_PLAYERS = 4
local KCP_OVERHEAD = 24
local PATH_DATA_SIZE = 8

local band = (bit32 and bit32.band) or bit.band
-- bxor of any number of 32-bit values, unsigned (LuaBitOp's is signed).
local bxor = (bit32 and bit32.bxor) or function(...) return bit.bxor(...) % 4294967296 end

local p = Proto("tickwire", "tickwire game protocol")

local packet_names = {
    [1] = "Connection request", [2] = "Challenge", [3] = "Challenge response",
    [4] = "Accept", [5] = "Denied", [6] = "Data", [7] = "Keep-alive",
    [8] = "Disconnect", [9] = "Mesh",
}
local frame_names = {
    [0x01] = "Ack-only", [0x02] = "Reliable", [0x03] = "Message", [0x04] = "Input",
    [0x05] = "Input ack", [0x06] = "Snapshot delta", [0x07] = "Full snapshot",
    [0x08] = "Resync request", [0x09] = "Checksum", [0x0a] = "Control",
    [0x0b] = "Path challenge", [0x0c] = "Path response", [0x0d] = "Roster",
    [0x0e] = "Standby ack", [0x0f] = "Standby step", [0x10] = "Standby state",
    [0x11] = "Successor", [0x12] = "Peer message", [0x13] = "Peer ack",
    [0x14] = "Effect", [0x15] = "Command", [0x16] = "Commit item", [0x17] = "Commit sums",
    [0x18] = "Mesh intro", [0x19] = "Mesh report", [0x1a] = "Parity",
}
local deny_names = {
    [1] = "invalid token", [2] = "expired", [3] = "wrong game", [4] = "server full",
    [5] = "version mismatch", [6] = "already connected", [7] = "bad cookie", [8] = "shutting down",
    [9] = "token used", [10] = "wrong server", [11] = "unknown key", [12] = "join refused",
    [13] = "rejoin refused",
}
local disconnect_names = {
    [1] = "closed", [2] = "timeout", [3] = "kicked", [4] = "server shutdown",
    [5] = "protocol error", [6] = "too slow", [7] = "host migration",
    [8] = "no committed state", [9] = "replaced by a rejoin",
}
local codec_names = { [0] = "none", [1] = "lz4", [2] = "zstd", [3] = "s2", [4] = "xor+rle", [5] = "predicted xor+rle" }
local cause_names = { [1] = "join", [2] = "resync", [3] = "host migration", [4] = "rejoin" }
local resync_names = {
    [1] = "revision gap", [2] = "patch error", [3] = "checksum mismatch",
    [4] = "slow client", [5] = "baseline missing",
}
local control_names = {
    [1] = "player joined", [2] = "player left", [3] = "action rejected",
    [4] = "host migration", [5] = "commit", [6] = "message late",
    [7] = "leave", [8] = "player interrupted", [9] = "player back", [10] = "hand-over",
    [11] = "standby end",
}
local kcp_cmd_names = { [81] = "push", [82] = "ack", [83] = "window probe", [84] = "window size" }

local f = p.fields
-- Prefix and session header.
f.magic       = ProtoField.string("tickwire.magic", "Protocol id")
f.version     = ProtoField.uint8("tickwire.version", "Version")
f.type        = ProtoField.uint8("tickwire.type", "Packet type", base.DEC, packet_names, 0x3f)
f.sealed      = ProtoField.bool("tickwire.sealed", "Sealed", 8, nil, 0x80)
f.conn_id     = ProtoField.uint32("tickwire.conn_id", "Connection id")
f.seq         = ProtoField.uint16("tickwire.seq", "Sequence")
f.ack         = ProtoField.uint16("tickwire.ack", "Ack")
f.ack_bits    = ProtoField.uint32("tickwire.ack_bits", "Ack bits", base.HEX)
f.tick        = ProtoField.uint32("tickwire.tick", "Tick")
f.interp_from = ProtoField.uint32("tickwire.interp_from", "Interpolated from-tick")
f.interp_to   = ProtoField.uint32("tickwire.interp_to", "Interpolated to-tick")
f.blend       = ProtoField.double("tickwire.blend", "Blend")
f.blend_raw   = ProtoField.uint16("tickwire.blend_raw", "Blend (fixed point)")
f.payload     = ProtoField.bytes("tickwire.payload", "Encrypted payload")
f.tag         = ProtoField.bytes("tickwire.tag", "AEAD tag")
-- Decryption with a key log.
f.decrypted   = ProtoField.bool("tickwire.decrypted", "Decrypted")
f.pn          = ProtoField.uint64("tickwire.packet_number", "Packet number")
f.key_line    = ProtoField.uint32("tickwire.keylog.line", "Key log line")
f.key_dir     = ProtoField.string("tickwire.keylog.direction", "Key direction")
f.key_time    = ProtoField.string("tickwire.keylog.time", "Key made")
-- Handshake.
f.req_key_id  = ProtoField.uint32("tickwire.request.key_id", "Token key id")
f.req_game    = ProtoField.uint64("tickwire.request.game_id", "Game id")
f.req_expires = ProtoField.uint64("tickwire.request.expires", "Token expires (unix s)")
f.req_nonce   = ProtoField.bytes("tickwire.request.nonce", "Token nonce")
f.req_token   = ProtoField.bytes("tickwire.request.token", "Sealed token")
f.req_padding = ProtoField.bytes("tickwire.request.padding", "Padding")
f.cookie      = ProtoField.bytes("tickwire.cookie", "Challenge cookie")
f.srv_random  = ProtoField.bytes("tickwire.challenge.server_random", "Server random")
f.cli_random  = ProtoField.bytes("tickwire.response.client_random", "Client random")
f.deny_reason = ProtoField.uint8("tickwire.denied.reason", "Deny reason", base.DEC, deny_names)
f.deny_counter = ProtoField.uint64("tickwire.denied.counter", "Denial counter (nonce)")
f.deny_detail = ProtoField.bytes("tickwire.denied.detail", "Sealed detail (refused slot and the game's reason)")
f.acc_client  = ProtoField.uint64("tickwire.accept.client_id", "Client id")
f.acc_rate    = ProtoField.uint16("tickwire.accept.tick_rate", "Tick rate (Hz)")
f.acc_hb      = ProtoField.uint16("tickwire.accept.heartbeat_ms", "Heartbeat (ms)")
f.acc_timeout = ProtoField.uint16("tickwire.accept.timeout_ms", "Timeout (ms)")
f.acc_maxpkt  = ProtoField.uint16("tickwire.accept.max_packet", "Max packet (bytes)")
f.acc_count   = ProtoField.uint8("tickwire.accept.player_count", "Players")
f.acc_player  = ProtoField.uint16("tickwire.accept.player", "Player")
f.disc_reason = ProtoField.uint8("tickwire.disconnect.reason", "Disconnect reason", base.DEC, disconnect_names)
-- Frames.
f.frame       = ProtoField.uint8("tickwire.frame.type", "Frame type", base.DEC, frame_names)
f.ackonly_delay = ProtoField.uint16("tickwire.ackonly.delay_us", "Ack delay (µs)")
f.rel_len     = ProtoField.uint32("tickwire.reliable.len", "Length")
f.rel_data    = ProtoField.bytes("tickwire.reliable.data", "KCP data")
f.kcp_conv    = ProtoField.uint32("tickwire.kcp.conv", "KCP conversation")
f.kcp_cmd     = ProtoField.uint8("tickwire.kcp.cmd", "KCP command", base.DEC, kcp_cmd_names)
f.kcp_frg     = ProtoField.uint8("tickwire.kcp.frg", "KCP fragments left")
f.kcp_wnd     = ProtoField.uint16("tickwire.kcp.wnd", "KCP window")
f.kcp_ts      = ProtoField.uint32("tickwire.kcp.ts", "KCP timestamp (ms)")
f.kcp_sn      = ProtoField.uint32("tickwire.kcp.sn", "KCP sequence")
f.kcp_una     = ProtoField.uint32("tickwire.kcp.una", "KCP unacknowledged")
f.kcp_len     = ProtoField.uint32("tickwire.kcp.len", "KCP data length")
f.msg_flags   = ProtoField.uint8("tickwire.message.flags", "Flags")
f.msg_chan    = ProtoField.uint8("tickwire.message.channel", "Channel")
f.msg_seq     = ProtoField.uint16("tickwire.message.seq", "Sequence")
f.msg_tick    = ProtoField.uint32("tickwire.message.tick", "Postmark tick")
f.msg_player  = ProtoField.uint16("tickwire.message.player", "Player")
f.msg_len     = ProtoField.uint32("tickwire.message.len", "Length")
f.msg_data    = ProtoField.bytes("tickwire.message.data", "Data")
f.in_player   = ProtoField.uint16("tickwire.input.player", "Player")
f.in_tick     = ProtoField.uint32("tickwire.input.tick", "Newest input tick")
f.in_count    = ProtoField.uint8("tickwire.input.count", "Inputs")
f.in_size     = ProtoField.uint32("tickwire.input.size", "Bytes per input")
f.in_data     = ProtoField.bytes("tickwire.input.data", "Inputs")
f.ia_player   = ProtoField.uint16("tickwire.input_ack.player", "Player")
f.ia_newest   = ProtoField.uint32("tickwire.input_ack.newest", "Newest input received")
f.ia_age      = ProtoField.int16("tickwire.input_ack.age", "Input age (100 µs units)")
f.ia_frames   = ProtoField.uint16("tickwire.input_ack.frames", "Reliable game frames queued for the connection")
f.d_tick      = ProtoField.uint32("tickwire.delta.tick", "Tick")
f.d_rev       = ProtoField.uint32("tickwire.delta.revision", "Revision")
f.d_base      = ProtoField.uint32("tickwire.delta.base_revision", "Base revision")
f.d_codec     = ProtoField.uint8("tickwire.delta.codec", "Codec", base.DEC, codec_names)
f.d_count     = ProtoField.uint16("tickwire.delta.count", "Entities")
f.d_len       = ProtoField.uint16("tickwire.delta.len", "Length")
f.d_data      = ProtoField.bytes("tickwire.delta.data", "Patches")
f.fs_cause    = ProtoField.uint8("tickwire.full.cause", "Cause", base.DEC, cause_names)
f.fs_tick     = ProtoField.uint32("tickwire.full.tick", "Tick")
f.fs_rev      = ProtoField.uint32("tickwire.full.revision", "Revision")
f.fs_codec    = ProtoField.uint8("tickwire.full.codec", "Codec", base.DEC, codec_names)
f.fs_raw      = ProtoField.uint32("tickwire.full.raw_len", "Decoded length")
f.fs_len      = ProtoField.uint32("tickwire.full.len", "Length")
f.fs_data     = ProtoField.bytes("tickwire.full.data", "Snapshot")
f.rs_reason   = ProtoField.uint8("tickwire.resync.reason", "Reason", base.DEC, resync_names)
f.rs_tick     = ProtoField.uint32("tickwire.resync.tick", "Last tick")
f.rs_rev      = ProtoField.uint32("tickwire.resync.revision", "Last revision")
f.cs_tick     = ProtoField.uint32("tickwire.checksum.tick", "Tick")
f.cs_sum      = ProtoField.uint64("tickwire.checksum.sum", "Checksum", base.HEX)
f.ctl_code    = ProtoField.uint8("tickwire.control.code", "Code", base.DEC, control_names)
f.ctl_player  = ProtoField.uint16("tickwire.control.player", "Player")
f.ctl_tick    = ProtoField.uint32("tickwire.control.tick", "Tick")
f.ctl_arg     = ProtoField.uint64("tickwire.control.arg", "Argument")
f.ctl_text    = ProtoField.string("tickwire.control.text", "Text")
f.path_chal   = ProtoField.bytes("tickwire.path_challenge.data", "Path challenge data")
f.path_resp   = ProtoField.bytes("tickwire.path_response.data", "Path response data")
f.ro_epoch    = ProtoField.uint32("tickwire.roster.epoch", "Epoch")
f.ro_host     = ProtoField.uint16("tickwire.roster.host", "Host's player")
f.ro_count    = ProtoField.uint8("tickwire.roster.count", "Members")
f.ro_slot     = ProtoField.uint16("tickwire.roster.slot", "Player")
f.ro_client   = ProtoField.uint64("tickwire.roster.client_id", "Client id")
f.ro_cand     = ProtoField.bool("tickwire.roster.candidate", "Can host", 8, nil, 0x01)
f.ro_addr     = ProtoField.string("tickwire.roster.addr", "Host address")
f.sa_epoch    = ProtoField.uint32("tickwire.standby_ack.epoch", "Epoch")
f.sa_tick     = ProtoField.uint32("tickwire.standby_ack.tick", "Held through tick")
local change_names = { [1] = "join", [2] = "leave" }
f.pm_player   = ProtoField.uint16("tickwire.peer_msg.player", "Player")
f.pm_copy     = ProtoField.bool("tickwire.peer_msg.copy", "Standby copy")
f.pm_seq      = ProtoField.uint32("tickwire.peer_msg.seq", "Sequence")
f.pm_channel  = ProtoField.uint8("tickwire.peer_msg.channel", "Channel")
f.pm_len      = ProtoField.uint32("tickwire.peer_msg.len", "Length")
f.pm_data     = ProtoField.bytes("tickwire.peer_msg.data", "Data")

f.ef_tick     = ProtoField.uint32("tickwire.effect.tick", "Tick")
f.ef_kind     = ProtoField.uint16("tickwire.effect.kind", "Kind")
f.ef_player   = ProtoField.uint16("tickwire.effect.player", "Player")
f.ef_entity   = ProtoField.uint32("tickwire.effect.entity", "Entity")
f.ef_data     = ProtoField.int32("tickwire.effect.data", "Data")

local command_kinds = { [0] = "input", [1] = "join", [2] = "leave" }
f.cm_kind     = ProtoField.uint8("tickwire.command.kind", "Kind", base.DEC, command_kinds)
f.cm_player   = ProtoField.uint16("tickwire.command.player", "Player")
f.cm_tick     = ProtoField.uint32("tickwire.command.tick", "Tick")
f.cm_seq      = ProtoField.uint32("tickwire.command.seq", "Sequence")
f.cm_len      = ProtoField.uint32("tickwire.command.len", "Length")
f.cm_data     = ProtoField.bytes("tickwire.command.data", "Data")
f.ci_live     = ProtoField.uint32("tickwire.commit_item.live", "Live tick")
f.ci_commands = ProtoField.uint32("tickwire.commit_item.commands", "Commands sent")
f.csm_from    = ProtoField.uint32("tickwire.commit_sums.from", "From tick")
f.csm_count   = ProtoField.uint8("tickwire.commit_sums.count", "Count")
f.csm_sum     = ProtoField.uint64("tickwire.commit_sums.sum", "Checksum", base.HEX)

local intro_ops = { [1] = "hello", [2] = "add", [3] = "remove", [4] = "check", [5] = "proof" }
f.pi_op      = ProtoField.uint8("tickwire.mesh_intro.op", "Op", base.DEC, intro_ops)
f.pi_conn    = ProtoField.uint32("tickwire.mesh_intro.conn", "Member connection")
f.pi_port    = ProtoField.uint16("tickwire.mesh_intro.port", "Mesh port")
f.pi_addr    = ProtoField.string("tickwire.mesh_intro.addr", "Member address")
f.pi_player  = ProtoField.uint16("tickwire.mesh_intro.player", "Member player")
f.pi_keys    = ProtoField.bytes("tickwire.mesh_intro.keys", "Pair keys")
f.pi_ckey    = ProtoField.bytes("tickwire.mesh_intro.check_key", "Check key")
f.pi_proof   = ProtoField.bytes("tickwire.mesh_intro.proof", "Challenge data received")
f.mr_count   = ProtoField.uint8("tickwire.mesh_report.count", "Links")
f.mr_conn    = ProtoField.uint32("tickwire.mesh_report.conn", "Member connection")
f.mr_rtt     = ProtoField.uint32("tickwire.mesh_report.rtt_us", "RTT (µs, 0 unreachable)")
f.srq_id     = ProtoField.uint32("tickwire.state_request.id", "Request")
f.srq_tick   = ProtoField.uint32("tickwire.state_request.tick", "Committed tick")
f.srq_flags  = ProtoField.uint8("tickwire.state_request.flags", "Flags (1: upload)", base.HEX)
f.ssm_id     = ProtoField.uint32("tickwire.state_sum.id", "Request")
f.ssm_tick   = ProtoField.uint32("tickwire.state_sum.tick", "Committed tick")
f.ssm_size   = ProtoField.uint32("tickwire.state_sum.size", "State size (0: not held)")
f.ssm_sum    = ProtoField.bytes("tickwire.state_sum.sum", "SHA-256")
f.ssm_codec  = ProtoField.uint8("tickwire.state_sum.codec", "Upload codec", base.DEC, codec_names)
f.ssm_packed = ProtoField.uint32("tickwire.state_sum.packed", "Upload size (0: none)")
f.sch_id     = ProtoField.uint32("tickwire.state_chunk.id", "State")
f.sch_offset = ProtoField.uint32("tickwire.state_chunk.offset", "Offset")
f.sch_len    = ProtoField.uint32("tickwire.state_chunk.len", "Length")
f.sch_data   = ProtoField.bytes("tickwire.state_chunk.data", "Data")
f.sbg_id     = ProtoField.uint32("tickwire.state_begin.id", "State")
f.sbg_reason = ProtoField.uint8("tickwire.state_begin.reason", "Reason (0: join)", base.DEC, resync_names)
f.sbg_tick   = ProtoField.uint32("tickwire.state_begin.tick", "Committed tick")
f.sbg_size   = ProtoField.uint32("tickwire.state_begin.size", "State size (0: blank world)")
f.sbg_codec  = ProtoField.uint8("tickwire.state_begin.codec", "Codec", base.DEC, codec_names)
f.sbg_packed = ProtoField.uint32("tickwire.state_begin.packed", "Packed size")
f.sbg_recv   = ProtoField.uint32("tickwire.state_begin.received", "Client's commands received")
f.sbg_count  = ProtoField.uint8("tickwire.state_begin.players", "Players")
f.sbg_player = ProtoField.uint16("tickwire.state_begin.player", "Player")
f.sbg_seq    = ProtoField.uint32("tickwire.state_begin.seq", "Last command seq")
f.par_first  = ProtoField.uint32("tickwire.parity.first", "First member (packet number, low 32 bits)")
f.par_members = ProtoField.uint8("tickwire.parity.members", "Members")
f.par_shards = ProtoField.uint8("tickwire.parity.shards", "Parity shards")
f.par_index  = ProtoField.uint8("tickwire.parity.index", "Shard index")
f.par_gap    = ProtoField.uint8("tickwire.parity.gap", "Gap to next member")
f.par_len    = ProtoField.uint16("tickwire.parity.len", "Member length")
f.par_shard  = ProtoField.bytes("tickwire.parity.shard", "Parity shard")

local peer_ack_kinds = { [1] = "player's messages run (and held by the standby)", [2] = "host's messages received by the player",
    [3] = "to the standby: player's messages run", [4] = "to the standby: host's messages received by the player" }
f.pa_player   = ProtoField.uint16("tickwire.peer_ack.player", "Player")
f.pa_kind     = ProtoField.uint8("tickwire.peer_ack.kind", "Kind", base.DEC, peer_ack_kinds)
f.pa_through  = ProtoField.uint32("tickwire.peer_ack.through", "Through sequence")

local successor_kinds = { [1] = "key (to the successor)", [2] = "token (for the successor's address)", [3] = "rejoin token (for this server)" }
f.su_epoch    = ProtoField.uint32("tickwire.successor.epoch", "Epoch")
f.su_slot     = ProtoField.uint16("tickwire.successor.slot", "Successor's player")
f.su_kind     = ProtoField.uint8("tickwire.successor.kind", "Kind", base.DEC, successor_kinds)
f.su_keyid    = ProtoField.uint32("tickwire.successor.key_id", "Key id")
f.su_key      = ProtoField.bytes("tickwire.successor.key", "Key")
f.su_toklen   = ProtoField.uint32("tickwire.successor.token_len", "Token length")
f.su_token    = ProtoField.string("tickwire.successor.token", "Connect token")
f.st_epoch    = ProtoField.uint32("tickwire.standby_state.epoch", "Epoch")
f.st_tick     = ProtoField.uint32("tickwire.standby_state.tick", "Tick")
f.st_rev      = ProtoField.uint32("tickwire.standby_state.revision", "Revision")
f.st_spawn    = ProtoField.uint32("tickwire.standby_state.server_spawn", "Server spawn counter")
f.st_np       = ProtoField.uint8("tickwire.standby_state.players", "Players")
f.st_player   = ProtoField.uint16("tickwire.standby_state.player", "Player")
f.st_ns       = ProtoField.uint8("tickwire.standby_state.snapshots", "Snapshots")
f.ss_epoch    = ProtoField.uint32("tickwire.standby_step.epoch", "Epoch")
f.ss_tick     = ProtoField.uint32("tickwire.standby_step.tick", "Tick")
f.ss_size     = ProtoField.uint16("tickwire.standby_step.input_size", "Input size")
f.ss_nchg     = ProtoField.uint8("tickwire.standby_step.changes", "Changes")
f.ss_nin      = ProtoField.uint8("tickwire.standby_step.inputs", "Inputs")
f.ss_nmsg     = ProtoField.uint16("tickwire.standby_step.messages", "Messages")
f.ss_player   = ProtoField.uint16("tickwire.standby_step.player", "Player")
f.ss_change   = ProtoField.uint8("tickwire.standby_step.change", "Change", base.DEC, change_names)
f.ss_reason   = ProtoField.string("tickwire.standby_step.reason", "Reason")
f.ss_missing  = ProtoField.bool("tickwire.standby_step.missing", "Missing", 8, nil, 0x01)
f.ss_rejected = ProtoField.bool("tickwire.standby_step.rejected", "Rejected", 8, nil, 0x02)
f.ss_rewound  = ProtoField.bool("tickwire.standby_step.rewound", "Rewound", 8, nil, 0x04)
f.ss_from     = ProtoField.uint32("tickwire.standby_step.view_from", "View from")
f.ss_to       = ProtoField.uint32("tickwire.standby_step.view_to", "View to")
f.ss_blend    = ProtoField.uint16("tickwire.standby_step.blend", "View blend")
f.ss_input    = ProtoField.bytes("tickwire.standby_step.input", "Input")
f.ss_channel  = ProtoField.uint8("tickwire.standby_step.channel", "Channel")
f.ss_postmark = ProtoField.uint32("tickwire.standby_step.postmark", "Postmark tick")
f.ss_late     = ProtoField.bool("tickwire.standby_step.late", "Late", 8, nil, 0x01)
f.ss_msglen   = ProtoField.uint32("tickwire.standby_step.msg_len", "Message length")
f.ss_msgdata  = ProtoField.bytes("tickwire.standby_step.msg_data", "Message data")

local ef_malformed = ProtoExpert.new("tickwire.malformed", "Malformed tickwire packet",
    expert.group.MALFORMED, expert.severity.ERROR)
local ef_undecryptable = ProtoExpert.new("tickwire.undecryptable", "Sealed tickwire packet not decrypted",
    expert.group.DECRYPTION, expert.severity.WARN)
p.experts = { ef_malformed, ef_undecryptable }

p.prefs.keylog_file = Pref.string("Key log file", "",
    "A tickwire key log (the file TICKWIRE_KEYLOG names in the processes whose traffic was captured): " ..
    "sealed packets whose key it holds are decrypted")

-- A malformed condition: flag it and stop dissecting this packet.
local function bad(tree, what)
    tree:add_proto_expert_info(ef_malformed, what)
    return nil
end

-- varint reads an unsigned LEB128 varint of at most 32 bits.
-- Returns value, size or nil, reason.
local function varint(buf, off)
    local v, mul = 0, 1
    for i = 0, 4 do
        if off + i >= buf:len() then return nil, "truncated varint" end
        local c = buf(off + i, 1):uint()
        v = v + band(c, 0x7f) * mul
        if c < 0x80 then
            if i == 4 and c > 0x0f then return nil, "varint overflows 32 bits" end
            if i > 0 and c == 0 then return nil, "non-minimal varint" end
            return v, i + 1
        end
        mul = mul * 128
    end
    return nil, "varint longer than 5 bytes"
end

local function have(buf, off, n) return off + n <= buf:len() end

-- Each frame parser takes (buf, off, tree) with off at the byte after the
-- type and returns the offset after the frame, or nil if malformed.

local function kcp_segments(buf, off, n, tree)
    local stop = off + n
    local o = off
    while stop - o >= KCP_OVERHEAD do
        local len = buf(o + 20, 4):le_uint()
        if o + KCP_OVERHEAD + len > stop then break end
        local cmd = buf(o + 4, 1):uint()
        local st = tree:add(p, buf(o, KCP_OVERHEAD + len),
            string.format("KCP %s sn=%d", kcp_cmd_names[cmd] or tostring(cmd), buf(o + 12, 4):le_uint()))
        st:add_le(f.kcp_conv, buf(o, 4))
        st:add(f.kcp_cmd, buf(o + 4, 1))
        st:add(f.kcp_frg, buf(o + 5, 1))
        st:add_le(f.kcp_wnd, buf(o + 6, 2))
        st:add_le(f.kcp_ts, buf(o + 8, 4))
        st:add_le(f.kcp_sn, buf(o + 12, 4))
        st:add_le(f.kcp_una, buf(o + 16, 4))
        st:add_le(f.kcp_len, buf(o + 20, 4))
        o = o + KCP_OVERHEAD + len
    end
    if o ~= stop then
        tree:add(p, buf(o, stop - o), "Bytes that are not whole KCP segments")
    end
end

local function frame_ackonly(buf, off, tree)
    if not have(buf, off, 2) then return bad(tree, "truncated ack-only frame") end
    tree:add_le(f.ackonly_delay, buf(off, 2))
    return off + 2
end

local function frame_reliable(buf, off, tree)
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "reliable frame: " .. sz) end
    if n > MAX_PACKET then return bad(tree, "reliable frame longer than a packet") end
    tree:add(f.rel_len, buf(off, sz), n)
    off = off + sz
    if not have(buf, off, n) then return bad(tree, "truncated reliable frame") end
    if n > 0 then
        tree:add(f.rel_data, buf(off, n))
        kcp_segments(buf, off, n, tree)
    end
    return off + n
end

local function frame_message(buf, off, tree)
    if not have(buf, off, 2) then return bad(tree, "truncated message frame") end
    local flags = buf(off, 1):uint()
    if band(flags, 0xf8) ~= 0 then return bad(tree, "message frame: unknown flags") end
    tree:add(f.msg_flags, buf(off, 1))
    tree:add(f.msg_chan, buf(off + 1, 1))
    off = off + 2
    if band(flags, 1) ~= 0 then
        if not have(buf, off, 2) then return bad(tree, "truncated message frame") end
        tree:add_le(f.msg_seq, buf(off, 2))
        off = off + 2
    end
    if band(flags, 2) ~= 0 then
        if not have(buf, off, 4) then return bad(tree, "truncated message frame") end
        tree:add_le(f.msg_tick, buf(off, 4))
        off = off + 4
    end
    if band(flags, 4) ~= 0 then
        if not have(buf, off, 2) then return bad(tree, "truncated message frame") end
        if buf(off, 2):le_uint() == 0 then return bad(tree, "message frame: player 0") end
        tree:add_le(f.msg_player, buf(off, 2))
        off = off + 2
    end
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "message frame: " .. sz) end
    if n > MAX_MESSAGE then return bad(tree, "message frame: length over limit") end
    tree:add(f.msg_len, buf(off, sz), n)
    off = off + sz
    if not have(buf, off, n) then return bad(tree, "truncated message frame") end
    if n > 0 then tree:add(f.msg_data, buf(off, n)) end
    return off + n
end

local function frame_input(buf, off, tree)
    if not have(buf, off, 7) then return bad(tree, "truncated input frame") end
    tree:add_le(f.in_player, buf(off, 2))
    tree:add_le(f.in_tick, buf(off + 2, 4))
    local count = buf(off + 6, 1):uint()
    tree:add(f.in_count, buf(off + 6, 1))
    off = off + 7
    local size, sz = varint(buf, off)
    if not size then return bad(tree, "input frame: " .. sz) end
    tree:add(f.in_size, buf(off, sz), size)
    off = off + sz
    if count == 0 or count > MAX_INPUTS then return bad(tree, "input frame: bad count") end
    if size == 0 or count * size > MAX_INPUT_BYTES then return bad(tree, "input frame: bad size") end
    local n = count * size
    if not have(buf, off, n) then return bad(tree, "truncated input frame") end
    tree:add(f.in_data, buf(off, n))
    return off + n
end

local function frame_input_ack(buf, off, tree)
    if not have(buf, off, 10) then return bad(tree, "truncated input ack frame") end
    tree:add_le(f.ia_player, buf(off, 2))
    tree:add_le(f.ia_newest, buf(off + 2, 4))
    local age = tree:add_le(f.ia_age, buf(off + 6, 2))
    local a = buf(off + 6, 2):le_int()
    if a == -32768 then
        age:append_text(" (missing: last input repeated)")
    else
        age:append_text(string.format(" (%.1f ms)", a / 10))
    end
    tree:add_le(f.ia_frames, buf(off + 8, 2))
    return off + 10
end

local function frame_delta(buf, off, tree)
    if not have(buf, off, 17) then return bad(tree, "truncated snapshot delta frame") end
    tree:add_le(f.d_tick, buf(off, 4))
    tree:add_le(f.d_rev, buf(off + 4, 4))
    tree:add_le(f.d_base, buf(off + 8, 4))
    local codec = buf(off + 12, 1):uint()
    if codec > 5 then return bad(tree, "snapshot delta frame: unknown codec") end
    tree:add(f.d_codec, buf(off + 12, 1))
    tree:add_le(f.d_count, buf(off + 13, 2))
    local n = buf(off + 15, 2):le_uint()
    if n > MAX_PACKET then return bad(tree, "snapshot delta frame longer than a packet") end
    tree:add_le(f.d_len, buf(off + 15, 2))
    off = off + 17
    if not have(buf, off, n) then return bad(tree, "truncated snapshot delta frame") end
    if n > 0 then tree:add(f.d_data, buf(off, n)) end
    return off + n
end

local function frame_full(buf, off, tree)
    if not have(buf, off, 10) then return bad(tree, "truncated full snapshot frame") end
    local cause = buf(off, 1):uint()
    local codec = buf(off + 9, 1):uint()
    tree:add(f.fs_cause, buf(off, 1))
    tree:add_le(f.fs_tick, buf(off + 1, 4))
    tree:add_le(f.fs_rev, buf(off + 5, 4))
    tree:add(f.fs_codec, buf(off + 9, 1))
    off = off + 10
    local raw, sz = varint(buf, off)
    if not raw then return bad(tree, "full snapshot frame: " .. sz) end
    tree:add(f.fs_raw, buf(off, sz), raw)
    off = off + sz
    local n, sz2 = varint(buf, off)
    if not n then return bad(tree, "full snapshot frame: " .. sz2) end
    tree:add(f.fs_len, buf(off, sz2), n)
    off = off + sz2
    if cause == 0 or cause > 4 then return bad(tree, "full snapshot frame: unknown cause") end
    if codec > 4 then return bad(tree, "full snapshot frame: unknown codec") end
    if raw > MAX_SNAPSHOT or n > MAX_SNAPSHOT then return bad(tree, "full snapshot frame: over size limit") end
    if not have(buf, off, n) then return bad(tree, "truncated full snapshot frame") end
    if n > 0 then tree:add(f.fs_data, buf(off, n)) end
    return off + n
end

local function frame_resync(buf, off, tree)
    if not have(buf, off, 9) then return bad(tree, "truncated resync request frame") end
    local reason = buf(off, 1):uint()
    if reason == 0 or reason > 5 then return bad(tree, "resync request frame: unknown reason") end
    tree:add(f.rs_reason, buf(off, 1))
    tree:add_le(f.rs_tick, buf(off + 1, 4))
    tree:add_le(f.rs_rev, buf(off + 5, 4))
    return off + 9
end

local function frame_checksum(buf, off, tree)
    if not have(buf, off, 12) then return bad(tree, "truncated checksum frame") end
    tree:add_le(f.cs_tick, buf(off, 4))
    tree:add_le(f.cs_sum, buf(off + 4, 8))
    return off + 12
end

local function frame_control(buf, off, tree)
    if not have(buf, off, 15) then return bad(tree, "truncated control frame") end
    local code = buf(off, 1):uint()
    if code == 0 or code > 11 then return bad(tree, "control frame: unknown code") end
    tree:add(f.ctl_code, buf(off, 1))
    tree:add_le(f.ctl_player, buf(off + 1, 2))
    tree:add_le(f.ctl_tick, buf(off + 3, 4))
    tree:add_le(f.ctl_arg, buf(off + 7, 8))
    off = off + 15
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "control frame: " .. sz) end
    if n > MAX_CONTROL_TEXT then return bad(tree, "control frame: text too long") end
    off = off + sz
    if not have(buf, off, n) then return bad(tree, "truncated control frame") end
    if n > 0 then tree:add(f.ctl_text, buf(off, n)) end
    return off + n
end

local function frame_roster(buf, off, tree)
    if not have(buf, off, 7) then return bad(tree, "truncated roster frame") end
    tree:add_le(f.ro_epoch, buf(off, 4))
    tree:add_le(f.ro_host, buf(off + 4, 2))
    local count = buf(off + 6, 1):uint()
    tree:add(f.ro_count, buf(off + 6, 1))
    if count == 0 or count > MAX_ROSTER_MEMBERS then return bad(tree, "roster frame: bad member count") end
    off = off + 7
    for _ = 1, count do
        if not have(buf, off, 12) then return bad(tree, "truncated roster frame") end
        local flags = buf(off + 10, 1):uint()
        local n = buf(off + 11, 1):uint()
        if flags > 1 then return bad(tree, "roster frame: unknown member flags") end
        if not have(buf, off + 12, n) then return bad(tree, "truncated roster frame") end
        local m = tree:add(p, buf(off, 12 + n), "Member")
        m:add_le(f.ro_slot, buf(off, 2))
        m:add_le(f.ro_client, buf(off + 2, 8))
        m:add(f.ro_cand, buf(off + 10, 1))
        if n > 0 then m:add(f.ro_addr, buf(off + 12, n)) end
        off = off + 12 + n
    end
    return off
end

local function frame_standby_ack(buf, off, tree)
    if not have(buf, off, 8) then return bad(tree, "truncated standby ack frame") end
    tree:add_le(f.sa_epoch, buf(off, 4))
    tree:add_le(f.sa_tick, buf(off + 4, 4))
    return off + 8
end

local function frame_standby_step(buf, off, tree)
    local trunc = "truncated standby step frame"
    if not have(buf, off, 14) then return bad(tree, trunc) end
    tree:add_le(f.ss_epoch, buf(off, 4))
    tree:add_le(f.ss_tick, buf(off + 4, 4))
    local size = buf(off + 8, 2):le_uint()
    tree:add_le(f.ss_size, buf(off + 8, 2))
    local nc = buf(off + 10, 1):uint()
    local ni = buf(off + 11, 1):uint()
    local nm = buf(off + 12, 2):le_uint()
    tree:add(f.ss_nchg, buf(off + 10, 1))
    tree:add(f.ss_nin, buf(off + 11, 1))
    tree:add_le(f.ss_nmsg, buf(off + 12, 2))
    if size == 0 or size > MAX_INPUT_SIZE then return bad(tree, "standby step frame: bad input size") end
    if nm > MAX_STANDBY_MESSAGES then return bad(tree, "standby step frame: too many messages") end
    off = off + 14
    for _ = 1, nc do
        if not have(buf, off, 4) then return bad(tree, trunc) end
        local kind = buf(off + 2, 1):uint()
        local n = buf(off + 3, 1):uint()
        if kind < 1 or kind > 3 then return bad(tree, "standby step frame: unknown change") end
        if kind == 1 and n > 0 then return bad(tree, "standby step frame: join with a reason") end
        if not have(buf, off + 4, n) then return bad(tree, trunc) end
        local c = tree:add(p, buf(off, 4 + n), "Change")
        c:add_le(f.ss_player, buf(off, 2))
        c:add(f.ss_change, buf(off + 2, 1))
        if n > 0 then c:add(f.ss_reason, buf(off + 4, n)) end
        off = off + 4 + n
    end
    for _ = 1, ni do
        if not have(buf, off, 3) then return bad(tree, trunc) end
        local flags = buf(off + 2, 1):uint()
        if flags > 7 then return bad(tree, "standby step frame: unknown input flags") end
        local view = 0
        if flags >= 4 then view = 10 end
        if not have(buf, off + 3, view + size) then return bad(tree, trunc) end
        local it = tree:add(p, buf(off, 3 + view + size), "Input")
        it:add_le(f.ss_player, buf(off, 2))
        it:add(f.ss_missing, buf(off + 2, 1))
        it:add(f.ss_rejected, buf(off + 2, 1))
        it:add(f.ss_rewound, buf(off + 2, 1))
        if view > 0 then
            it:add_le(f.ss_from, buf(off + 3, 4))
            it:add_le(f.ss_to, buf(off + 7, 4))
            it:add_le(f.ss_blend, buf(off + 11, 2))
        end
        it:add(f.ss_input, buf(off + 3 + view, size))
        off = off + 3 + view + size
    end
    for _ = 1, nm do
        if not have(buf, off, 8) then return bad(tree, trunc) end
        local flags = buf(off + 7, 1):uint()
        if flags > 1 then return bad(tree, "standby step frame: unknown message flags") end
        local n, sz = varint(buf, off + 8)
        if not n then return bad(tree, "standby step frame: " .. sz) end
        if n > MAX_MESSAGE then return bad(tree, "standby step frame: message too long") end
        if not have(buf, off + 8 + sz, n) then return bad(tree, trunc) end
        local m = tree:add(p, buf(off, 8 + sz + n), "Message")
        m:add_le(f.ss_player, buf(off, 2))
        m:add(f.ss_channel, buf(off + 2, 1))
        m:add_le(f.ss_postmark, buf(off + 3, 4))
        m:add(f.ss_late, buf(off + 7, 1))
        m:add(f.ss_msglen, buf(off + 8, sz), n)
        if n > 0 then m:add(f.ss_msgdata, buf(off + 8 + sz, n)) end
        off = off + 8 + sz + n
    end
    return off
end

local function frame_successor(buf, off, tree)
    local trunc = "truncated successor frame"
    if not have(buf, off, 7) then return bad(tree, trunc) end
    tree:add_le(f.su_epoch, buf(off, 4))
    tree:add_le(f.su_slot, buf(off + 4, 2))
    local kind = buf(off + 6, 1):uint()
    if kind < 1 or kind > 3 then return bad(tree, "successor frame: unknown kind") end
    tree:add(f.su_kind, buf(off + 6, 1))
    off = off + 7
    if kind == 1 then
        if not have(buf, off, 4 + KEY_SIZE) then return bad(tree, trunc) end
        tree:add_le(f.su_keyid, buf(off, 4))
        tree:add(f.su_key, buf(off + 4, KEY_SIZE))
        return off + 4 + KEY_SIZE
    end
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "successor frame: " .. sz) end
    if n == 0 or n > MAX_SUCCESSOR_TOKEN then return bad(tree, "successor frame: bad token length") end
    tree:add(f.su_toklen, buf(off, sz), n)
    off = off + sz
    if not have(buf, off, n) then return bad(tree, trunc) end
    tree:add(f.su_token, buf(off, n))
    return off + n
end

local function frame_peer_message(buf, off, tree)
    local trunc = "truncated peer message frame"
    if not have(buf, off, 8) then return bad(tree, trunc) end
    tree:add_le(f.pm_player, buf(off, 2))
    local flags = buf(off + 2, 1):uint()
    if flags > 1 then return bad(tree, "peer message frame: unknown flags") end
    tree:add(f.pm_copy, buf(off + 2, 1), flags == 1)
    if buf(off + 3, 4):le_uint() == 0 then return bad(tree, "peer message frame: sequence 0") end
    tree:add_le(f.pm_seq, buf(off + 3, 4))
    tree:add(f.pm_channel, buf(off + 7, 1))
    off = off + 8
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "peer message frame: " .. sz) end
    if n > MAX_MESSAGE then return bad(tree, "peer message frame: length over limit") end
    tree:add(f.pm_len, buf(off, sz), n)
    off = off + sz
    if not have(buf, off, n) then return bad(tree, trunc) end
    if n > 0 then tree:add(f.pm_data, buf(off, n)) end
    return off + n
end

local function frame_peer_ack(buf, off, tree)
    if not have(buf, off, 7) then return bad(tree, "truncated peer ack frame") end
    local kind = buf(off + 2, 1):uint()
    if kind < 1 or kind > 4 then return bad(tree, "peer ack frame: unknown kind") end
    tree:add_le(f.pa_player, buf(off, 2))
    tree:add(f.pa_kind, buf(off + 2, 1))
    tree:add_le(f.pa_through, buf(off + 3, 4))
    return off + 7
end

local function frame_effect(buf, off, tree)
    if not have(buf, off, 28) then return bad(tree, "truncated effect frame") end
    tree:add_le(f.ef_tick, buf(off, 4))
    tree:add_le(f.ef_kind, buf(off + 4, 2))
    tree:add_le(f.ef_player, buf(off + 6, 2))
    tree:add_le(f.ef_entity, buf(off + 8, 4))
    for i = 0, 3 do tree:add_le(f.ef_data, buf(off + 12 + 4 * i, 4)) end
    return off + 28
end

local function frame_command(buf, off, tree)
    local trunc = "truncated command frame"
    if not have(buf, off, 11) then return bad(tree, trunc) end
    local kind = buf(off, 1):uint()
    if kind > 2 then return bad(tree, "command frame: unknown kind") end
    tree:add(f.cm_kind, buf(off, 1))
    tree:add_le(f.cm_player, buf(off + 1, 2))
    tree:add_le(f.cm_tick, buf(off + 3, 4))
    tree:add_le(f.cm_seq, buf(off + 7, 4))
    off = off + 11
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "command frame: " .. sz) end
    if n > MAX_INPUT_BYTES then return bad(tree, "command frame: data length over limit") end
    if (kind == 0) ~= (n > 0) then return bad(tree, "command frame: data length does not fit the kind") end
    tree:add(f.cm_len, buf(off, sz), n)
    off = off + sz
    if not have(buf, off, n) then return bad(tree, trunc) end
    if n > 0 then tree:add(f.cm_data, buf(off, n)) end
    return off + n
end

local function frame_commit_item(buf, off, tree)
    if not have(buf, off, 8) then return bad(tree, "truncated commit item frame") end
    tree:add_le(f.ci_live, buf(off, 4))
    tree:add_le(f.ci_commands, buf(off + 4, 4))
    return off + 8
end

local function frame_commit_sums(buf, off, tree)
    local trunc = "truncated commit sums frame"
    if not have(buf, off, 5) then return bad(tree, trunc) end
    tree:add_le(f.csm_from, buf(off, 4))
    local n = buf(off + 4, 1):uint()
    if n == 0 or n > MAX_COMMIT_SUMS then return bad(tree, "commit sums frame: bad count") end
    tree:add(f.csm_count, buf(off + 4, 1))
    off = off + 5
    if not have(buf, off, 8 * n) then return bad(tree, trunc) end
    for i = 0, n - 1 do tree:add_le(f.csm_sum, buf(off + 8 * i, 8)) end
    return off + 8 * n
end

local function frame_mesh_intro(buf, off, tree)
    local trunc = "truncated mesh intro frame"
    if not have(buf, off, 5) then return bad(tree, trunc) end
    local op = buf(off, 1):uint()
    if op < 1 or op > 5 then return bad(tree, "mesh intro frame: unknown op") end
    tree:add(f.pi_op, buf(off, 1))
    tree:add_le(f.pi_conn, buf(off + 1, 4))
    off = off + 5
    if op == 1 then
        if not have(buf, off, 2) then return bad(tree, trunc) end
        tree:add_le(f.pi_port, buf(off, 2))
        return off + 2
    elseif op == 3 then
        return off
    elseif op == 4 then
        if not have(buf, off, 32) then return bad(tree, trunc) end
        tree:add(f.pi_ckey, buf(off, 32))
        return off + 32
    elseif op == 5 then
        if not have(buf, off, 8) then return bad(tree, trunc) end
        tree:add(f.pi_proof, buf(off, 8))
        return off + 8
    end
    if not have(buf, off, 20) then return bad(tree, trunc) end
    local v = buf(off, 1):uint()
    local ip = buf(off + 1, 16)
    local port = buf(off + 17, 2):le_uint()
    local mapped = ip:bytes():subset(0, 12) == ByteArray.new("00000000000000000000ffff")
    local addr
    if v == 4 and mapped then
        local b = ip:bytes()
        addr = string.format("%d.%d.%d.%d:%d", b:get_index(12), b:get_index(13), b:get_index(14), b:get_index(15), port)
    elseif v == 6 and not mapped then
        -- RFC 5952 text, as Go prints it: the longest run of two or more
        -- zero groups (the first of equals) becomes "::".
        local g = {}
        for i = 0, 7 do g[i + 1] = ip(2 * i, 2):uint() end
        local best, bestLen, i = 0, 1, 1
        while i <= 8 do
            if g[i] == 0 then
                local j = i
                while j <= 8 and g[j] == 0 do j = j + 1 end
                if j - i > bestLen then best, bestLen = i, j - i end
                i = j
            else
                i = i + 1
            end
        end
        local function hex(a, b)
            local t = {}
            for k = a, b do t[#t + 1] = string.format("%x", g[k]) end
            return table.concat(t, ":")
        end
        local text
        if best > 0 then
            text = hex(1, best - 1) .. "::" .. hex(best + bestLen, 8)
        else
            text = hex(1, 8)
        end
        addr = "[" .. text .. "]:" .. port
    else
        return bad(tree, "mesh intro frame: bad address")
    end
    if port == 0 then return bad(tree, "mesh intro frame: bad address") end
    tree:add(f.pi_addr, buf(off, 19), addr)
    local n = buf(off + 19, 1):uint()
    if n == 0 or n > MAX_PLAYERS then return bad(tree, "mesh intro frame: bad player count") end
    off = off + 20
    if not have(buf, off, 2 * n + 64) then return bad(tree, trunc) end
    for i = 0, n - 1 do tree:add_le(f.pi_player, buf(off + 2 * i, 2)) end
    off = off + 2 * n
    tree:add(f.pi_keys, buf(off, 64))
    return off + 64
end

local function frame_mesh_report(buf, off, tree)
    local trunc = "truncated mesh report frame"
    if not have(buf, off, 1) then return bad(tree, trunc) end
    local n = buf(off, 1):uint()
    if n > MAX_MESH_REPORT then return bad(tree, "mesh report frame: bad count") end
    tree:add(f.mr_count, buf(off, 1))
    off = off + 1
    if not have(buf, off, 8 * n) then return bad(tree, trunc) end
    for i = 0, n - 1 do
        tree:add_le(f.mr_conn, buf(off + 8 * i, 4))
        tree:add_le(f.mr_rtt, buf(off + 8 * i + 4, 4))
    end
    return off + 8 * n
end

local function frame_parity(buf, off, tree)
    local trunc = "truncated parity frame"
    if not have(buf, off, 7) then return bad(tree, trunc) end
    local k, m, idx = buf(off + 4, 1):uint(), buf(off + 5, 1):uint(), buf(off + 6, 1):uint()
    if k < 1 or k > MAX_PARITY_MEMBERS then return bad(tree, "parity frame: bad members") end
    if m < 1 or m > MAX_PARITY_SHARDS or idx >= m then return bad(tree, "parity frame: bad shards") end
    tree:add_le(f.par_first, buf(off, 4))
    tree:add(f.par_members, buf(off + 4, 1))
    tree:add(f.par_shards, buf(off + 5, 1))
    tree:add(f.par_index, buf(off + 6, 1))
    off = off + 7
    if not have(buf, off, 3 * k - 1) then return bad(tree, trunc) end
    for i = 0, k - 2 do
        if buf(off + i, 1):uint() == 0 then return bad(tree, "parity frame: bad gap") end
        tree:add(f.par_gap, buf(off + i, 1))
    end
    off = off + k - 1
    local longest = 0
    for i = 0, k - 1 do
        local n = buf(off + 2 * i, 2):le_uint()
        if n < 1 or n > MAX_PACKET then return bad(tree, "parity frame: bad member length") end
        if n > longest then longest = n end
        tree:add_le(f.par_len, buf(off + 2 * i, 2))
    end
    off = off + 2 * k
    if not have(buf, off, longest) then return bad(tree, trunc) end
    tree:add(f.par_shard, buf(off, longest))
    return off + longest
end

local function frame_standby_state(buf, off, tree)
    local trunc = "truncated standby state frame"
    if not have(buf, off, 17) then return bad(tree, trunc) end
    tree:add_le(f.st_epoch, buf(off, 4))
    tree:add_le(f.st_tick, buf(off + 4, 4))
    tree:add_le(f.st_rev, buf(off + 8, 4))
    tree:add_le(f.st_spawn, buf(off + 12, 4))
    local np = buf(off + 16, 1):uint()
    tree:add(f.st_np, buf(off + 16, 1))
    off = off + 17
    if not have(buf, off, 2 * np + 1) then return bad(tree, trunc) end
    for i = 0, np - 1 do tree:add_le(f.st_player, buf(off + 2 * i, 2)) end
    off = off + 2 * np
    local ns = buf(off, 1):uint()
    tree:add(f.st_ns, buf(off, 1))
    if ns == 0 or ns > MAX_STANDBY_SNAPSHOTS then return bad(tree, "standby state frame: bad snapshot count") end
    off = off + 1
    local raw = 0
    for _ = 1, ns do
        if not have(buf, off, 1) then return bad(tree, trunc) end
        local st = tree:add(p, buf(off), "Snapshot")
        st:add(f.frame, buf(off, 1))
        if buf(off, 1):uint() ~= 0x07 then return bad(st, "standby state frame: not a full snapshot") end
        local nxt = frame_full(buf, off + 1, st)
        if not nxt then return nil end
        raw = raw + varint(buf, off + 11) -- the raw length, valid once frame_full passed
        st:set_len(nxt - off)
        off = nxt
    end
    if raw > 4 * MAX_SNAPSHOT then return bad(tree, "standby state frame: snapshots over size limit") end
    return off
end

-- The two path frames share one layout: the type, then 8 bytes of data.
local function frame_state_request(buf, off, tree)
    if not have(buf, off, 9) then return bad(tree, "truncated state request frame") end
    local flags = buf(off + 8, 1):uint()
    tree:add_le(f.srq_id, buf(off, 4))
    tree:add_le(f.srq_tick, buf(off + 4, 4))
    tree:add(f.srq_flags, buf(off + 8, 1))
    if band(flags, 0xfe) ~= 0 then return bad(tree, "state request frame: unknown flags") end
    return off + 9
end

local function frame_state_sum(buf, off, tree)
    if not have(buf, off, 49) then return bad(tree, "truncated state sum frame") end
    local size = buf(off + 8, 4):le_uint()
    local codec = buf(off + 44, 1):uint()
    local packed = buf(off + 45, 4):le_uint()
    tree:add_le(f.ssm_id, buf(off, 4))
    tree:add_le(f.ssm_tick, buf(off + 4, 4))
    tree:add_le(f.ssm_size, buf(off + 8, 4))
    tree:add(f.ssm_sum, buf(off + 12, STATE_SUM_SIZE))
    tree:add(f.ssm_codec, buf(off + 44, 1))
    tree:add_le(f.ssm_packed, buf(off + 45, 4))
    if size > MAX_STATE or packed > MAX_STATE then return bad(tree, "state sum frame: over size limit") end
    if codec > 3 or (packed == 0 and codec ~= 0) then return bad(tree, "state sum frame: bad codec") end
    if size == 0 and packed ~= 0 then return bad(tree, "state sum frame: upload of no state") end
    return off + 49
end

local function frame_state_chunk(buf, off, tree)
    if not have(buf, off, 8) then return bad(tree, "truncated state chunk frame") end
    local offset = buf(off + 4, 4):le_uint()
    tree:add_le(f.sch_id, buf(off, 4))
    tree:add_le(f.sch_offset, buf(off + 4, 4))
    off = off + 8
    local n, sz = varint(buf, off)
    if not n then return bad(tree, "state chunk frame: " .. sz) end
    tree:add(f.sch_len, buf(off, sz), n)
    off = off + sz
    if n == 0 or n > MAX_STATE_CHUNK or offset + n > MAX_STATE then return bad(tree, "state chunk frame: bad length") end
    if not have(buf, off, n) then return bad(tree, "truncated state chunk frame") end
    tree:add(f.sch_data, buf(off, n))
    return off + n
end

local function frame_state_begin(buf, off, tree)
    local trunc = "truncated state begin frame"
    if not have(buf, off, 23) then return bad(tree, trunc) end
    local reason = buf(off + 4, 1):uint()
    local size = buf(off + 9, 4):le_uint()
    local codec = buf(off + 13, 1):uint()
    local packed = buf(off + 14, 4):le_uint()
    local n = buf(off + 22, 1):uint()
    tree:add_le(f.sbg_id, buf(off, 4))
    tree:add(f.sbg_reason, buf(off + 4, 1))
    tree:add_le(f.sbg_tick, buf(off + 5, 4))
    tree:add_le(f.sbg_size, buf(off + 9, 4))
    tree:add(f.sbg_codec, buf(off + 13, 1))
    tree:add_le(f.sbg_packed, buf(off + 14, 4))
    tree:add_le(f.sbg_recv, buf(off + 18, 4))
    tree:add(f.sbg_count, buf(off + 22, 1))
    if reason > 5 then return bad(tree, "state begin frame: unknown reason") end
    if size > MAX_STATE or packed > MAX_STATE or (size == 0) ~= (packed == 0) then return bad(tree, "state begin frame: bad size") end
    if codec > 3 or (size == 0 and codec ~= 0) then return bad(tree, "state begin frame: bad codec") end
    off = off + 23
    if not have(buf, off, 6 * n) then return bad(tree, trunc) end
    for i = 0, n - 1 do
        tree:add_le(f.sbg_player, buf(off + 6 * i, 2))
        tree:add_le(f.sbg_seq, buf(off + 6 * i + 2, 4))
    end
    return off + 6 * n
end

local function path_frame(field, what)
    return function(buf, off, tree)
        if not have(buf, off, PATH_DATA_SIZE) then return bad(tree, "truncated " .. what .. " frame") end
        tree:add(field, buf(off, PATH_DATA_SIZE))
        return off + PATH_DATA_SIZE
    end
end

local frame_parsers = {
    [0x01] = frame_ackonly, [0x02] = frame_reliable, [0x03] = frame_message,
    [0x04] = frame_input, [0x05] = frame_input_ack, [0x06] = frame_delta,
    [0x07] = frame_full, [0x08] = frame_resync, [0x09] = frame_checksum,
    [0x0a] = frame_control,
    [0x0b] = path_frame(f.path_chal, "path challenge"),
    [0x0c] = path_frame(f.path_resp, "path response"),
    [0x0d] = frame_roster, [0x0e] = frame_standby_ack, [0x0f] = frame_standby_step,
    [0x10] = frame_standby_state, [0x11] = frame_successor, [0x12] = frame_peer_message,
    [0x13] = frame_peer_ack, [0x14] = frame_effect, [0x15] = frame_command,
    [0x16] = frame_commit_item, [0x17] = frame_commit_sums, [0x18] = frame_mesh_intro,
    [0x19] = frame_mesh_report, [0x1a] = frame_parity,
    [0x1b] = frame_state_request, [0x1c] = frame_state_sum, [0x1d] = frame_state_chunk,
    [0x1e] = frame_state_begin,
}

-- frames dissects a plaintext payload and returns a short summary or nil.
local function frames(buf, off, tree)
    local names = {}
    local count = 0
    while off < buf:len() do
        count = count + 1
        if count > MAX_FRAMES then return bad(tree, "more than 64 frames") end
        local t = buf(off, 1):uint()
        local parse = frame_parsers[t]
        local ft = tree:add(p, buf(off), "Frame: " .. (frame_names[t] or "unknown"))
        ft:add(f.frame, buf(off, 1))
        if not parse then return bad(ft, "unknown frame type") end
        local nxt = parse(buf, off + 1, ft)
        if not nxt then return nil end
        ft:set_len(nxt - off)
        names[#names + 1] = frame_names[t]
        off = nxt
    end
    return table.concat(names, ", ")
end

local function dissect_accept_body(buf, off, tree)
    if not have(buf, off, 17) then return bad(tree, "truncated accept") end
    tree:add_le(f.acc_client, buf(off, 8))
    tree:add_le(f.acc_rate, buf(off + 8, 2))
    tree:add_le(f.acc_hb, buf(off + 10, 2))
    tree:add_le(f.acc_timeout, buf(off + 12, 2))
    local maxpkt = buf(off + 14, 2):le_uint()
    tree:add_le(f.acc_maxpkt, buf(off + 14, 2))
    local count = buf(off + 16, 1):uint()
    tree:add(f.acc_count, buf(off + 16, 1))
    if count == 0 or count > MAX_PLAYERS then return bad(tree, "accept: bad player count") end
    if maxpkt < HEADER_SIZE + SEAL_OVERHEAD or maxpkt > MAX_PACKET then return bad(tree, "accept: bad max packet") end
    if not have(buf, off + 17, 2 * count) then return bad(tree, "truncated accept") end
    for i = 0, count - 1 do
        tree:add_le(f.acc_player, buf(off + 17 + 2 * i, 2))
    end
    return ""
end

-- AES-256-GCM opening, in Lua: Wireshark's Lua has no AES. Words are
-- 32-bit big-endian numbers; bytes come out of them by arithmetic, which
-- is cheaper than a bit32 call, and only XOR takes one. The tables are
-- built the first time a key is used.

local aes -- S-box and round tables, and GHASH's reductions

-- xtime multiplies a byte by x in GF(2^8).
local function xtime(b)
    b = b * 2
    if b >= 256 then b = bxor(b, 0x11b) end
    return b
end

local function aes_tables()
    -- The S-box: each byte's inverse (walking p over the powers of 3 and q
    -- over those of its inverse) through the affine map.
    local sbox = { [0] = 0x63 }
    local pw, q = 1, 1
    repeat
        pw = bxor(pw, xtime(pw))
        q = bxor(q, q * 2); q = bxor(q, q * 4); q = bxor(q, q * 16)
        q = q % 256
        if q >= 128 then q = bxor(q, 0x09) end
        local rot = function(k) return (q * 2 ^ k + math.floor(q / 2 ^ (8 - k))) % 256 end
        sbox[pw] = bxor(q, rot(1), rot(2), rot(3), rot(4), 0x63)
    until pw == 1
    -- Round tables: SubBytes and MixColumns of one byte, each rotation.
    local te0, te1, te2, te3 = {}, {}, {}, {}
    for i = 0, 255 do
        local s1 = sbox[i]
        local s2 = xtime(s1)
        local s3 = bxor(s2, s1)
        te0[i] = ((s2 * 256 + s1) * 256 + s1) * 256 + s3
        te1[i] = ((s3 * 256 + s2) * 256 + s1) * 256 + s1
        te2[i] = ((s1 * 256 + s3) * 256 + s2) * 256 + s1
        te3[i] = ((s1 * 256 + s1) * 256 + s3) * 256 + s2
    end
    -- GHASH multiplies by x^8 by shifting a byte out of the end of the
    -- block; in GCM's reflected bit order that byte, times x^128 =
    -- x^7 + x^2 + x + 1, is a 16-bit value XORed into the block's top.
    local red = {}
    for b = 0, 255 do
        local r = 0
        for i = 0, 7 do
            if math.floor(b / 2 ^ i) % 2 == 1 then r = bxor(r, 0xe100 * 2 ^ i / 128) end
        end
        red[b] = r * 65536
    end
    aes = { sbox = sbox, te0 = te0, te1 = te1, te2 = te2, te3 = te3, red = red }
end

-- aes_expand returns the 60 round-key words (0..59) of a 32-byte key.
local function aes_expand(key)
    local sbox = aes.sbox
    local w = {}
    for i = 0, 7 do
        local a, b, c, d = key:byte(4 * i + 1, 4 * i + 4)
        w[i] = ((a * 256 + b) * 256 + c) * 256 + d
    end
    local rcon = 1
    for i = 8, 59 do
        local t = w[i - 1]
        if i % 4 == 0 then
            local d = t % 256; t = (t - d) / 256
            local c = t % 256; t = (t - c) / 256
            local b = t % 256; local a = (t - b) / 256
            if i % 8 == 0 then -- RotWord, SubWord, Rcon
                t = bxor(((sbox[b] * 256 + sbox[c]) * 256 + sbox[d]) * 256 + sbox[a], rcon * 16777216)
                rcon = xtime(rcon)
            else -- SubWord
                t = ((sbox[a] * 256 + sbox[b]) * 256 + sbox[c]) * 256 + sbox[d]
            end
        end
        w[i] = bxor(w[i - 8], t)
    end
    return w
end

-- aes_encrypt encrypts the block s0..s3 with the round keys w.
local function aes_encrypt(w, s0, s1, s2, s3)
    local te0, te1, te2, te3, sbox = aes.te0, aes.te1, aes.te2, aes.te3, aes.sbox
    s0, s1, s2, s3 = bxor(s0, w[0]), bxor(s1, w[1]), bxor(s2, w[2]), bxor(s3, w[3])
    local a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3
    for r = 4, 56, 4 do
        -- The state's bytes: aN is word N's first (top) byte, dN its last.
        d0 = s0 % 256; s0 = (s0 - d0) / 256; c0 = s0 % 256; s0 = (s0 - c0) / 256; b0 = s0 % 256; a0 = (s0 - b0) / 256
        d1 = s1 % 256; s1 = (s1 - d1) / 256; c1 = s1 % 256; s1 = (s1 - c1) / 256; b1 = s1 % 256; a1 = (s1 - b1) / 256
        d2 = s2 % 256; s2 = (s2 - d2) / 256; c2 = s2 % 256; s2 = (s2 - c2) / 256; b2 = s2 % 256; a2 = (s2 - b2) / 256
        d3 = s3 % 256; s3 = (s3 - d3) / 256; c3 = s3 % 256; s3 = (s3 - c3) / 256; b3 = s3 % 256; a3 = (s3 - b3) / 256
        if r == 56 then break end
        s0 = bxor(te0[a0], te1[b1], te2[c2], te3[d3], w[r])
        s1 = bxor(te0[a1], te1[b2], te2[c3], te3[d0], w[r + 1])
        s2 = bxor(te0[a2], te1[b3], te2[c0], te3[d1], w[r + 2])
        s3 = bxor(te0[a3], te1[b0], te2[c1], te3[d2], w[r + 3])
    end
    -- The last round has no MixColumns.
    return bxor(((sbox[a0] * 256 + sbox[b1]) * 256 + sbox[c2]) * 256 + sbox[d3], w[56]),
        bxor(((sbox[a1] * 256 + sbox[b2]) * 256 + sbox[c3]) * 256 + sbox[d0], w[57]),
        bxor(((sbox[a2] * 256 + sbox[b3]) * 256 + sbox[c0]) * 256 + sbox[d1], w[58]),
        bxor(((sbox[a3] * 256 + sbox[b0]) * 256 + sbox[c1]) * 256 + sbox[d2], w[59])
end

-- ghash_tables returns, for every byte value b, b·H as four words (GCM's
-- bit order: a byte's top bit is the coefficient of the lowest power).
local function ghash_tables(h0, h1, h2, h3)
    local powers = {} -- H·x^i, i = 0..7
    for i = 0, 7 do
        powers[i] = { h0, h1, h2, h3 }
        local carry = h3 % 2 -- ·x: one bit towards the end, reduced
        h3 = (h3 - carry) / 2 + (h2 % 2) * 2147483648
        h2 = (h2 - h2 % 2) / 2 + (h1 % 2) * 2147483648
        h1 = (h1 - h1 % 2) / 2 + (h0 % 2) * 2147483648
        h0 = (h0 - h0 % 2) / 2
        if carry == 1 then h0 = bxor(h0, 0xe1000000) end
    end
    local t0, t1, t2, t3 = {}, {}, {}, {}
    for b = 0, 255 do
        local z0, z1, z2, z3 = 0, 0, 0, 0
        for i = 0, 7 do
            if math.floor(b / 2 ^ (7 - i)) % 2 == 1 then
                local v = powers[i]
                z0, z1, z2, z3 = bxor(z0, v[1]), bxor(z1, v[2]), bxor(z2, v[3]), bxor(z3, v[4])
            end
        end
        t0[b], t1[b], t2[b], t3[b] = z0, z1, z2, z3
    end
    return { t0, t1, t2, t3 }
end

-- ghash_mul returns x·H, Horner's rule over x's bytes from the last:
-- r = r·x^8 + byte·H.
local function ghash_mul(ht, x0, x1, x2, x3)
    local t0, t1, t2, t3, red = ht[1], ht[2], ht[3], ht[4], aes.red
    local r0, r1, r2, r3 = 0, 0, 0, 0
    local x, b, o
    for k = 3, 0, -1 do
        if k == 3 then x = x3 elseif k == 2 then x = x2 elseif k == 1 then x = x1 else x = x0 end
        for _ = 1, 4 do
            b = x % 256; x = (x - b) / 256
            o = r3 % 256
            r3 = (r3 - o) / 256 + (r2 % 256) * 16777216
            r2 = (r2 - r2 % 256) / 256 + (r1 % 256) * 16777216
            r1 = (r1 - r1 % 256) / 256 + (r0 % 256) * 16777216
            r0 = bxor((r0 - r0 % 256) / 256, red[o], t0[b])
            r1, r2, r3 = bxor(r1, t1[b]), bxor(r2, t2[b]), bxor(r3, t3[b])
        end
    end
    return r0, r1, r2, r3
end

-- ghash_string absorbs s, zero-padded to whole blocks, into z0..z3.
local function ghash_string(ht, s, z0, z1, z2, z3)
    local n = #s
    if n % 16 ~= 0 then s = s .. string.rep("\0", 16 - n % 16) end
    for i = 1, n, 16 do
        local a1, a2, a3, a4, b1, b2, b3, b4, c1, c2, c3, c4, d1, d2, d3, d4 = s:byte(i, i + 15)
        z0, z1, z2, z3 = ghash_mul(ht,
            bxor(z0, ((a1 * 256 + a2) * 256 + a3) * 256 + a4), bxor(z1, ((b1 * 256 + b2) * 256 + b3) * 256 + b4),
            bxor(z2, ((c1 * 256 + c2) * 256 + c3) * 256 + c4), bxor(z3, ((d1 * 256 + d2) * 256 + d3) * 256 + d4))
    end
    return z0, z1, z2, z3
end

-- gcm_key expands a 32-byte key: its round keys and H's tables.
local function gcm_key(key)
    if not aes then aes_tables() end
    local w = aes_expand(key)
    return { w = w, ht = ghash_tables(aes_encrypt(w, 0, 0, 0, 0)) }
end

-- gcm_ghash is GHASH of the additional data and the ciphertext, with
-- their lengths in bits (below 2^32 here).
local function gcm_ghash(k, aad, ct)
    local z0, z1, z2, z3 = ghash_string(k.ht, aad, 0, 0, 0, 0)
    z0, z1, z2, z3 = ghash_string(k.ht, ct, z0, z1, z2, z3)
    return ghash_mul(k.ht, z0, bxor(z1, #aad * 8), z2, bxor(z3, #ct * 8))
end

-- be_bytes splits a word into its four bytes, first byte first.
local function be_bytes(x)
    local d = x % 256; x = (x - d) / 256
    local c = x % 256; x = (x - c) / 256
    local b = x % 256
    return (x - b) / 256, b, c, d
end

-- gcm_decrypt decrypts ct in counter mode from counter block n0 n1 n2 2.
local function gcm_decrypt(k, n0, n1, n2, ct)
    local out, n = {}, #ct
    local padded = ct
    if n % 16 ~= 0 then padded = ct .. string.rep("\0", 16 - n % 16) end
    local ctr = 2
    for i = 1, n, 16 do
        local k0, k1, k2, k3 = aes_encrypt(k.w, n0, n1, n2, ctr)
        ctr = ctr + 1
        local a1, a2, a3, a4, b1, b2, b3, b4, c1, c2, c3, c4, d1, d2, d3, d4 = padded:byte(i, i + 15)
        out[#out + 1] = string.char(be_bytes(bxor(k0, ((a1 * 256 + a2) * 256 + a3) * 256 + a4)))
        out[#out + 1] = string.char(be_bytes(bxor(k1, ((b1 * 256 + b2) * 256 + b3) * 256 + b4)))
        out[#out + 1] = string.char(be_bytes(bxor(k2, ((c1 * 256 + c2) * 256 + c3) * 256 + c4)))
        out[#out + 1] = string.char(be_bytes(bxor(k3, ((d1 * 256 + d2) * 256 + d3) * 256 + d4)))
    end
    return table.concat(out):sub(1, n)
end

-- The key log (docs/PROTOCOL.md, "Key log"): lines "tickwire1 DIR CONN
-- TIME KEY". keylog.conns maps a connection id to its keys, newest first;
-- each key keeps its expanded form once used. The file is read again from
-- where the last read stopped whenever a packet finds no key that opens
-- it, so a live capture picks up the keys of new sessions.
local keylog = { path = "", offset = 0, line = 0, conns = {}, seen = {}, generation = 0 }

-- What one pass over the capture learnt: per frame number the result of
-- opening it, per key the largest packet number it opened (packet
-- numbers are rebuilt from 16-bit sequences), per flow the key that
-- opened its last packet. Reset when a capture is (re)dissected.
local opened = { frames = {}, largest = {}, flows = {} }

function p.init()
    opened = { frames = {}, largest = {}, flows = {} }
end

-- keylog_read reads the lines appended to the key log since the last
-- read and returns whether they brought keys.
local function keylog_read()
    local fh, err = io.open(keylog.path, "rb")
    keylog.unreadable = not fh and err
    if not fh then return false end
    local size = fh:seek("end")
    if not size or size < keylog.offset then -- replaced: start over
        keylog = { path = keylog.path, offset = 0, line = 0, conns = {}, seen = {}, generation = keylog.generation + 1 }
        opened.flows = {}
    end
    if not size or size == keylog.offset then
        fh:close()
        return false
    end
    fh:seek("set", keylog.offset)
    local data = fh:read("*a") or ""
    fh:close()
    local whole = data:find("\n[^\n]*$") -- a line still being written waits
    if not whole then return false end
    keylog.offset = keylog.offset + whole
    local added = false
    for line in data:sub(1, whole):gmatch("([^\n]*)\n") do
        keylog.line = keylog.line + 1
        local label, dir, conn, made, key = line:match("^(%S+) (%S+) (%d+) (%S+) (%x+)\r?$")
        conn = tonumber(conn)
        if label == "tickwire1" and (dir == "c2s" or dir == "s2c" or dir == "mesh") and #key == 64 and
            conn < 4294967296 and not keylog.seen[dir .. conn .. key:lower()] then
            keylog.seen[dir .. conn .. key:lower()] = true
            local list = keylog.conns[conn] or {}
            keylog.conns[conn] = list
            table.insert(list, 1, { dir = dir, made = made, line = keylog.line,
                key = key:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end) })
            added = true
        end
    end
    if added then keylog.generation = keylog.generation + 1 end
    return added
end

-- expand_pn rebuilds a packet number from its low 16 bits: the one
-- nearest to the largest opened so far (reliability.ExpandSeq).
local function expand_pn(largest, seq)
    local pn = largest - largest % 65536 + seq
    if pn + 32768 <= largest then
        pn = pn + 65536
    elseif pn > largest + 32768 and pn >= 65536 then
        pn = pn - 65536
    end
    return pn
end

-- bswap turns a 32-bit number into the big-endian word of its
-- little-endian bytes.
local function bswap(x)
    local a, b, c, d = be_bytes(x)
    return ((d * 256 + c) * 256 + b) * 256 + a
end

-- A key that has opened nothing yet tries the packet numbers seq + k·65536
-- for k below this: a capture that starts up to 4 million packets into a
-- session (18 hours at 60 packets a second) still opens.
local MAX_WRAPS = 64

-- try_key opens the sealed packet raw with key e, or returns nil.
local function try_key(e, raw, seq)
    e.gcm = e.gcm or gcm_key(e.key)
    local aad, ct = raw:sub(1, HEADER_SIZE), raw:sub(HEADER_SIZE + 1, -SEAL_OVERHEAD - 1)
    local g0, g1, g2, g3 = gcm_ghash(e.gcm, aad, ct)
    -- The tag is GHASH XOR the encryption of the counter block numbered 1:
    -- compare that block's encryption with tag XOR GHASH.
    local t = { raw:byte(-SEAL_OVERHEAD, -1) }
    local want0 = bxor(g0, ((t[1] * 256 + t[2]) * 256 + t[3]) * 256 + t[4])
    local want1 = bxor(g1, ((t[5] * 256 + t[6]) * 256 + t[7]) * 256 + t[8])
    local want2 = bxor(g2, ((t[9] * 256 + t[10]) * 256 + t[11]) * 256 + t[12])
    local want3 = bxor(g3, ((t[13] * 256 + t[14]) * 256 + t[15]) * 256 + t[16])
    local largest = opened.largest[e]
    local first, last = 0, MAX_WRAPS - 1
    if largest then first, last = 0, 0 end
    for wrap = first, last do
        local pn = seq + wrap * 65536
        if largest then pn = expand_pn(largest, seq) end
        -- Nonce kind 0 (four zero bytes), then the packet number, both
        -- little-endian.
        local n1, n2 = bswap(pn % 4294967296), bswap(math.floor(pn / 4294967296))
        local j0, j1, j2, j3 = aes_encrypt(e.gcm.w, 0, n1, n2, 1)
        if j0 == want0 and j1 == want1 and j2 == want2 and j3 == want3 then
            if not largest or pn > largest then opened.largest[e] = pn end
            return { plain = gcm_decrypt(e.gcm, 0, n1, n2, ct), key = e, pn = pn }
        end
    end
    return nil
end

-- open_sealed finds the key of a sealed session or mesh packet and opens
-- it. It returns the result, or one naming why not.
local function open_sealed(buf, pinfo, t)
    local conn, seq = buf(4, 4):le_uint(), buf(8, 2):le_uint()
    local raw = buf:raw()
    local flow = table.concat({ conn, tostring(pinfo.src), pinfo.src_port, tostring(pinfo.dst), pinfo.dst_port }, " ")
    local tried
    for attempt = 1, 2 do
        tried = 0
        local keys = keylog.conns[conn] or {}
        local order = {}
        local hint = opened.flows[flow]
        if hint then order[1] = hint end
        for _, e in ipairs(keys) do
            if e ~= hint and (e.dir == "mesh") == (t == 9) then order[#order + 1] = e end
        end
        for _, e in ipairs(order) do
            tried = tried + 1
            local r = try_key(e, raw, seq)
            if r then
                opened.flows[flow] = e
                return r
            end
        end
        -- The key may be in lines written since the last read.
        if attempt == 1 and not keylog_read() then break end
    end
    if keylog.unreadable then
        return { why = "the key log cannot be read: " .. keylog.unreadable }
    end
    if tried == 0 then
        return { why = string.format("no key for connection %d in the key log", conn) }
    end
    return { why = string.format("none of the %d keys of connection %d in the key log opens it", tried, conn) }
end

-- decrypt returns what opening a sealed packet gave (plain, key and pn,
-- or why), or nil when no key log is set. A frame's result is kept: a
-- failure is tried again only once the key log has new keys.
local function decrypt(buf, pinfo, t)
    local path = p.prefs.keylog_file
    if not path or path == "" then return nil end
    if path ~= keylog.path then
        keylog = { path = path, offset = 0, line = 0, conns = {}, seen = {}, generation = keylog.generation + 1 }
        opened = { frames = {}, largest = {}, flows = {} }
    end
    local r = opened.frames[pinfo.number]
    if r and (r.plain or r.generation == keylog.generation) then return r end
    local ok, res = pcall(open_sealed, buf, pinfo, t)
    if not ok then res = { why = "decryption failed: " .. tostring(res) } end
    res.generation = keylog.generation
    opened.frames[pinfo.number] = res
    return res
end

-- dissect_payload dissects the plaintext after the session header of a
-- packet of type t: buf holds the header and the plaintext (the packet,
-- or the packet decrypted).
local function dissect_payload(buf, pinfo, tree, t)
    local rest = buf:len() - HEADER_SIZE
    if t == 4 then
        return dissect_accept_body(buf, HEADER_SIZE, tree)
    elseif t == 8 then
        if rest < 1 then return bad(tree, "truncated disconnect") end
        local r = buf(HEADER_SIZE, 1):uint()
        tree:add(f.disc_reason, buf(HEADER_SIZE, 1))
        if r == 0 or r > 9 then return bad(tree, "disconnect: unknown reason") end
        pinfo.cols.info:append(" " .. disconnect_names[r])
        return ""
    end
    local summary = frames(buf, HEADER_SIZE, tree)
    if summary and summary ~= "" then pinfo.cols.info:append(" [" .. summary .. "]") end
    return summary
end

local function dissect_session(buf, pinfo, tree, t, sealed)
    if buf:len() < HEADER_SIZE then return bad(tree, "truncated session header") end
    local tick = buf(16, 4):le_uint()
    tree:add_le(f.conn_id, buf(4, 4))
    tree:add_le(f.seq, buf(8, 2))
    tree:add_le(f.ack, buf(10, 2))
    tree:add_le(f.ack_bits, buf(12, 4))
    tree:add_le(f.tick, buf(16, 4))
    tree:add(f.interp_from, buf(20, 2), (tick - buf(20, 2):le_uint()) % 4294967296)
    tree:add(f.interp_to, buf(22, 2), (tick - buf(22, 2):le_uint()) % 4294967296)
    local blend = buf(24, 2):le_uint()
    tree:add(f.blend, buf(24, 2), blend / 65535)
    tree:add_le(f.blend_raw, buf(24, 2))
    pinfo.cols.info:append(string.format(" conn=%d seq=%d ack=%d tick=%d",
        buf(4, 4):le_uint(), buf(8, 2):le_uint(), buf(10, 2):le_uint(), tick))

    local rest = buf:len() - HEADER_SIZE
    if not sealed then return dissect_payload(buf, pinfo, tree, t) end
    if rest < SEAL_OVERHEAD then return bad(tree, "sealed payload shorter than its tag") end
    local opened_as = decrypt(buf, pinfo, t)
    if opened_as and opened_as.plain then
        local sealed_part = buf(HEADER_SIZE, rest)
        tree:add(f.decrypted, sealed_part, true):set_generated()
        local pn = opened_as.pn
        tree:add(f.pn, sealed_part, UInt64.new(pn % 4294967296, math.floor(pn / 4294967296))):set_generated()
        local k = opened_as.key
        tree:add(f.key_line, sealed_part, k.line):set_generated()
        tree:add(f.key_dir, sealed_part, k.dir):set_generated()
        tree:add(f.key_time, sealed_part, k.made):set_generated()
        local plain = ByteArray.new(buf:raw(0, HEADER_SIZE) .. opened_as.plain, true)
        return dissect_payload(plain:tvb("Decrypted tickwire packet"), pinfo, tree, t)
    end
    if rest > SEAL_OVERHEAD then
        tree:add(f.payload, buf(HEADER_SIZE, rest - SEAL_OVERHEAD))
    end
    tree:add(f.tag, buf(buf:len() - SEAL_OVERHEAD, SEAL_OVERHEAD))
    pinfo.cols.info:append(" [sealed]")
    if opened_as then tree:add_proto_expert_info(ef_undecryptable, opened_as.why) end
    return ""
end

function p.dissector(buf, pinfo, tree)
    pinfo.cols.protocol = "TICKWIRE"
    local root = tree:add(p, buf(), "tickwire")
    if buf:len() < PREFIX_SIZE then return bad(root, "shorter than the packet prefix") end
    root:add(f.magic, buf(0, 2))
    root:add(f.version, buf(2, 1))
    local tb = buf(3, 1):uint()
    local t = band(tb, 0x3f)
    local sealed = band(tb, 0x80) ~= 0
    root:add(f.type, buf(3, 1))
    root:add(f.sealed, buf(3, 1))
    pinfo.cols.info = packet_names[t] or "Unknown"
    root:append_text(", " .. (packet_names[t] or "unknown"))
    if buf(0, 1):uint() ~= 0x74 or buf(1, 1):uint() ~= 0x77 then return bad(root, "bad protocol id") end
    if buf(2, 1):uint() ~= VERSION and t ~= 5 then return bad(root, "unknown protocol version") end
    if not packet_names[t] then return bad(root, "unknown packet type") end
    if band(tb, 0x40) ~= 0 then return bad(root, "reserved flag set") end
    local session = (t == 4 or t == 6 or t == 7 or t == 8 or t == 9)
    if sealed and not session and t ~= 5 then return bad(root, "sealed flag on a handshake packet") end

    if session then
        dissect_session(buf, pinfo, root, t, sealed)
    elseif t == 1 then
        if buf:len() < REQUEST_SIZE then return bad(root, "connection request shorter than 256 bytes") end
        local used = REQ_TOKEN + TOKEN_SEALED_SIZE
        root:add_le(f.req_key_id, buf(REQ_KEY_ID, 4))
        root:add_le(f.req_game, buf(REQ_GAME_ID, 8))
        root:add_le(f.req_expires, buf(REQ_EXPIRES, 8))
        root:add(f.req_nonce, buf(REQ_NONCE, NONCE_SIZE))
        root:add(f.req_token, buf(REQ_TOKEN, TOKEN_SEALED_SIZE))
        root:add(f.req_padding, buf(used, REQUEST_SIZE - used))
    elseif t == 2 then
        if buf:len() < PREFIX_SIZE + COOKIE_SIZE + RANDOM_SIZE then return bad(root, "truncated challenge") end
        root:add(f.cookie, buf(PREFIX_SIZE, COOKIE_SIZE))
        root:add(f.srv_random, buf(PREFIX_SIZE + COOKIE_SIZE, RANDOM_SIZE))
    elseif t == 3 then
        local tag = PREFIX_SIZE + COOKIE_SIZE + RANDOM_SIZE
        if buf:len() < tag + SEAL_OVERHEAD then return bad(root, "truncated challenge response") end
        root:add(f.cookie, buf(PREFIX_SIZE, COOKIE_SIZE))
        root:add(f.cli_random, buf(PREFIX_SIZE + COOKIE_SIZE, RANDOM_SIZE))
        root:add(f.tag, buf(tag, SEAL_OVERHEAD))
    elseif t == 5 then
        if buf:len() < DENIED_SIZE then return bad(root, "truncated denied") end
        local r = buf(PREFIX_SIZE, 1):uint()
        root:add(f.deny_reason, buf(PREFIX_SIZE, 1))
        if not deny_names[r] then return bad(root, "denied: unknown reason") end
        pinfo.cols.info:append(": " .. deny_names[r])
        if sealed then
            if buf(2, 1):uint() ~= VERSION then return bad(root, "sealed denial of another version") end
            if buf:len() < DENIED_SEALED_SIZE then return bad(root, "truncated sealed denial") end
            local n = buf:len() - DENIED_SEALED_SIZE
            if n > MAX_DENY_DETAIL then return bad(root, "sealed denial: detail too long") end
            root:add_le(f.deny_counter, buf(PREFIX_SIZE + 1, 8))
            if n > 0 then root:add(f.deny_detail, buf(DENIED_TAG, n)) end
            root:add(f.tag, buf(DENIED_TAG + n, SEAL_OVERHEAD))
            pinfo.cols.info:append(" [sealed]")
        end
    end
end

-- Heuristic: 't' 'w', version 3, a known type, no reserved flag.
local function heuristic(buf, pinfo, tree)
    if buf:len() < PREFIX_SIZE then return false end
    if buf(0, 1):uint() ~= 0x74 or buf(1, 1):uint() ~= 0x77 then return false end
    if buf(2, 1):uint() ~= VERSION then return false end
    local tb = buf(3, 1):uint()
    if band(tb, 0x40) ~= 0 or not packet_names[band(tb, 0x3f)] then return false end
    p.dissector(buf, pinfo, tree)
    return true
end

DissectorTable.get("udp.port"):add(7777, p)
p:register_heuristic("udp", heuristic)

-- The relay's control packets: a protocol of their own (docs/PROTOCOL.md,
-- "Relay control packets"), on whatever ports a relay uses.
local RELAY_VERSION = 1
local RELAY_REQUEST_SIZE = 46
local RELAY_REPLY_SIZE = 17
local rp = Proto("tickwire_relay", "tickwire relay control")
local relay_types = { [1] = "Bind request", [2] = "Bind reply" }
local relay_sides = { [0] = "joiner", [1] = "host" }
local relay_status = {
    [0] = "ok", [1] = "grant expired", [2] = "side in use by another address",
    [3] = "relay full", [4] = "byte budget spent",
}
local rf = rp.fields
rf.magic         = ProtoField.bytes("tickwire_relay.magic", "Magic")
rf.version       = ProtoField.uint8("tickwire_relay.version", "Version")
rf.type          = ProtoField.uint8("tickwire_relay.type", "Type", base.DEC, relay_types)
rf.grant_format  = ProtoField.uint8("tickwire_relay.grant.format", "Grant format")
rf.grant_side    = ProtoField.uint8("tickwire_relay.grant.side", "Side", base.DEC, relay_sides)
rf.grant_alloc   = ProtoField.uint64("tickwire_relay.grant.allocation", "Allocation")
rf.grant_expires = ProtoField.uint64("tickwire_relay.grant.expires", "Grant expires (unix s)")
rf.grant_budget  = ProtoField.uint64("tickwire_relay.grant.budget", "Budget (bytes)")
rf.grant_mac     = ProtoField.bytes("tickwire_relay.grant.mac", "MAC")
rf.status        = ProtoField.uint8("tickwire_relay.reply.status", "Status", base.DEC, relay_status)
rf.peer_bound    = ProtoField.bool("tickwire_relay.reply.peer_bound", "Peer bound", 8, nil, 0x01)
rf.reply_side    = ProtoField.uint8("tickwire_relay.reply.side", "Side", base.DEC, relay_sides)
rf.reply_alloc   = ProtoField.uint64("tickwire_relay.reply.allocation", "Allocation")
rf.reply_port    = ProtoField.uint16("tickwire_relay.reply.port", "Relayed port")
local ef_relay_malformed = ProtoExpert.new("tickwire_relay.malformed", "Malformed relay control packet",
    expert.group.MALFORMED, expert.severity.ERROR)
rp.experts = { ef_relay_malformed }

local function bad_relay(tree, what)
    tree:add_proto_expert_info(ef_relay_malformed, what)
    return nil
end

function rp.dissector(buf, pinfo, tree)
    pinfo.cols.protocol = "TICKWIRE-RELAY"
    local root = tree:add(rp, buf(), "tickwire relay control")
    if buf:len() < PREFIX_SIZE then return bad_relay(root, "shorter than the prefix") end
    root:add(rf.magic, buf(0, 2))
    root:add(rf.version, buf(2, 1))
    root:add(rf.type, buf(3, 1))
    local t = buf(3, 1):uint()
    pinfo.cols.info = relay_types[t] or "Unknown"
    if buf(2, 1):uint() ~= RELAY_VERSION then return bad_relay(root, "unknown version") end
    if t == 1 then
        if buf:len() ~= RELAY_REQUEST_SIZE then return bad_relay(root, "bind request not 46 bytes") end
        root:add(rf.grant_format, buf(4, 1))
        root:add(rf.grant_side, buf(5, 1))
        root:add_le(rf.grant_alloc, buf(6, 8))
        root:add_le(rf.grant_expires, buf(14, 8))
        root:add_le(rf.grant_budget, buf(22, 8))
        root:add(rf.grant_mac, buf(30, 16))
        if buf(4, 1):uint() ~= 1 then return bad_relay(root, "unknown grant format") end
        if buf(5, 1):uint() > 1 then return bad_relay(root, "side neither 0 nor 1") end
        pinfo.cols.info:append(", " .. relay_sides[buf(5, 1):uint()])
    elseif t == 2 then
        if buf:len() ~= RELAY_REPLY_SIZE then return bad_relay(root, "bind reply not 17 bytes") end
        root:add(rf.status, buf(4, 1))
        root:add(rf.peer_bound, buf(5, 1))
        root:add(rf.reply_side, buf(6, 1))
        root:add_le(rf.reply_alloc, buf(7, 8))
        root:add_le(rf.reply_port, buf(15, 2))
        local st = buf(4, 1):uint()
        if not relay_status[st] then return bad_relay(root, "unknown status") end
        if band(buf(5, 1):uint(), 0xfe) ~= 0 then return bad_relay(root, "unknown flags") end
        if buf(6, 1):uint() > 1 then return bad_relay(root, "side neither 0 nor 1") end
        pinfo.cols.info:append(": " .. relay_status[st])
    else
        return bad_relay(root, "unknown type")
    end
end

-- Heuristic: 'R' 'w', version 1, type 1 or 2.
local function relay_heuristic(buf, pinfo, tree)
    if buf:len() < PREFIX_SIZE then return false end
    if buf(0, 1):uint() ~= 0x52 or buf(1, 1):uint() ~= 0x77 then return false end
    if buf(2, 1):uint() ~= RELAY_VERSION then return false end
    if not relay_types[buf(3, 1):uint()] then return false end
    rp.dissector(buf, pinfo, tree)
    return true
end

rp:register_heuristic("udp", relay_heuristic)
