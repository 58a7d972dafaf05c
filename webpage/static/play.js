// The browser client's glue: the transport (WebTransport datagrams, else
// a WebSocket), the keyboard and mouse, and drawing what the Go client
// (cmd/tickwire-web, WebAssembly) says to draw. The game, prediction,
// interpolation and protocol all run in Go.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const page = { frame: null, transport: '', error: '', overlay: false };
  window.tickwirePage = page; // for tests and the curious

  function state(s, text) {
    document.body.dataset.state = s;
    $('status').textContent = text || s;
  }
  function fail(text, link) {
    page.error = text;
    state('error', 'error');
    const m = $('message');
    m.textContent = text + ' ';
    if (link) {
      const a = document.createElement('a');
      a.href = link.href;
      a.textContent = link.text;
      m.append(a);
    }
    m.hidden = false;
  }

  // The token: from the lobby (session storage, set just before it sent
  // us here) or the URL fragment (#token=...), which never reaches a server.
  function takeToken() {
    const frag = new URLSearchParams(location.hash.slice(1));
    let t = frag.get('token');
    if (t) { history.replaceState(null, '', location.pathname + location.search); return t; }
    t = sessionStorage.getItem('tickwire.token');
    sessionStorage.removeItem('tickwire.token');
    return t;
  }

  function withTimeout(p, ms, what) {
    return Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(what + ' timed out')), ms))]);
  }

  const datagramMaxAge = 100; // ms a datagram may wait in the browser's queues

  async function openWebTransport(cfg, onPacket) {
    const wt = cfg.webtransport;
    const host = params.get('wt') || wt.addr || `${location.hostname}:${wt.port}`;
    const opts = {};
    if (wt.certHash) {
      const raw = Uint8Array.from(atob(wt.certHash), (c) => c.charCodeAt(0));
      opts.serverCertificateHashes = [{ algorithm: 'sha-256', value: raw }];
    }
    const t = new WebTransport(`https://${host}${wt.path}`, opts);
    await withTimeout(t.ready, 5000, 'WebTransport');
    // QUIC congestion-controls datagrams, which UDP does not: under loss
    // the browser queues them, they arrive late, the clock leads more,
    // packets grow, and the queue grows with them. A datagram that waited
    // longer than a few ticks is worth less than the next one (every
    // packet repeats the unacknowledged inputs): drop it.
    if ('outgoingMaxAge' in t.datagrams) t.datagrams.outgoingMaxAge = datagramMaxAge;
    if ('incomingMaxAge' in t.datagrams) t.datagrams.incomingMaxAge = datagramMaxAge;
    const writer = t.datagrams.writable.getWriter();
    const reader = t.datagrams.readable.getReader();
    (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        if (page.wt) page.wt.recv++;
        onPacket(value);
      }
    })().catch(() => {});
    t.closed.then(() => closed('WebTransport session closed'), (e) => closed('WebTransport: ' + e));
    const st = page.wt = { sent: 0, done: 0, recv: 0, max: t.datagrams.maxDatagramSize, big: 0, maxAge: t.datagrams.outgoingMaxAge };
    return { name: 'webtransport', send: (b) => { st.sent++; if (b.length > st.max) st.big++; writer.write(b).then(() => st.done++, () => {}); } };
  }

  function openWebSocket(cfg, onPacket) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${cfg.websocket}`);
      ws.binaryType = 'arraybuffer';
      ws.onopen = () => resolve({ name: 'websocket', send: (b) => { if (ws.readyState === 1) ws.send(b); } });
      ws.onerror = () => reject(new Error('WebSocket failed'));
      ws.onmessage = (ev) => onPacket(new Uint8Array(ev.data));
      ws.onclose = () => closed('WebSocket closed');
    });
  }

  function closed(why) {
    if (page.session && !page.ended) page.ended = why;
  }

  // Keyboard and mouse → the input the Go client samples every tick.
  const keys = new Set();
  const mouse = { x: 0, y: 0, fire: 0 };
  function sendInput() {
    const s = page.session;
    if (!s || !s.input) return;
    let mx = 0, my = 0;
    if (keys.has('KeyA') || keys.has('ArrowLeft')) mx -= 127;
    if (keys.has('KeyD') || keys.has('ArrowRight')) mx += 127;
    if (keys.has('KeyW') || keys.has('ArrowUp')) my -= 127;
    if (keys.has('KeyS') || keys.has('ArrowDown')) my += 127;
    let buttons = mouse.fire;
    if (keys.has('Space')) buttons |= 1;
    if (keys.has('KeyE')) buttons |= 2;
    const c = $('view');
    const aim = Math.atan2(mouse.y - c.clientHeight / 2, mouse.x - c.clientWidth / 2);
    s.input(mx, my, aim, buttons);
  }
  addEventListener('keydown', (e) => {
    if (e.code === 'Backquote' || e.code === 'F3') {
      page.overlay = !page.overlay;
      $('overlay').hidden = !page.overlay;
      e.preventDefault();
      return;
    }
    keys.add(e.code);
    sendInput();
  });
  addEventListener('keyup', (e) => { keys.delete(e.code); sendInput(); });
  addEventListener('mousemove', (e) => { mouse.x = e.clientX; mouse.y = e.clientY; sendInput(); });
  addEventListener('mousedown', (e) => { mouse.fire |= e.button === 2 ? 2 : 1; sendInput(); });
  addEventListener('mouseup', () => { mouse.fire = 0; sendInput(); });
  addEventListener('contextmenu', (e) => e.preventDefault());
  addEventListener('blur', () => { keys.clear(); mouse.fire = 0; sendInput(); });

  // The players' names from the lobby that assigned the game, by slot;
  // a player the lobby did not name (a bot) is P<slot>.
  page.names = {};
  const nameOf = (slot) => page.names[slot] || 'P' + slot;
  async function followNames(game) {
    for (;;) {
      try {
        const r = await fetch(`/api/play/${encodeURIComponent(game)}/players`, { cache: 'no-store' });
        if (!r.ok) return; // not a game of this lobby
        const names = {};
        for (const p of (await r.json()).players || []) names[p.slot] = p.name;
        page.names = names;
        if (page.session && !page.spectator) state('playing', `playing as ${nameOf(page.session.slot)}`);
      } catch (e) { /* the lobby is away: keep the names we have */ }
      await new Promise((res) => setTimeout(res, 3000));
    }
  }

  // Drawing: the camera follows the own avatar; 1 m = scale px.
  const colors = { own: '#4af', player: '#fa4', npc: '#888', projectile: '#ff6' };
  function draw(f) {
    const c = $('view');
    const w = c.clientWidth, h = c.clientHeight, dpr = devicePixelRatio || 1;
    if (c.width !== w * dpr || c.height !== h * dpr) { c.width = w * dpr; c.height = h * dpr; }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#161a1d';
    g.fillRect(0, 0, w, h);
    const scale = Math.max(8, Math.min(w, h) / 40);
    // The camera: on the own avatar; a spectator's on the first player.
    const me = f.bodies.find((b) => b.kind === 'player' && b.player === f.self) ||
      f.bodies.find((b) => b.kind === 'player') || { x: 128, y: 128 };
    const sx = (x) => w / 2 + (x - me.x) * scale, sy = (y) => h / 2 + (y - me.y) * scale;
    g.strokeStyle = '#223';
    g.lineWidth = 1;
    for (let m = 0; m <= 256; m += 8) {
      g.beginPath(); g.moveTo(sx(m), sy(0)); g.lineTo(sx(m), sy(256)); g.stroke();
      g.beginPath(); g.moveTo(sx(0), sy(m)); g.lineTo(sx(256), sy(m)); g.stroke();
    }
    g.strokeStyle = '#556';
    g.strokeRect(sx(0), sy(0), 256 * scale, 256 * scale);
    for (const b of f.bodies) {
      const x = sx(b.x), y = sy(b.y);
      if (b.kind === 'projectile') {
        g.fillStyle = colors.projectile;
        g.beginPath(); g.arc(x, y, Math.max(2, 0.15 * scale), 0, 7); g.fill();
        continue;
      }
      const r = (b.kind === 'npc' ? 0.6 : 0.5) * scale;
      // A player whose connection is silent is drawn faded, and says so.
      const away = b.kind === 'player' && (f.interrupted || []).includes(b.player);
      g.globalAlpha = b.hp > 0 && !away ? 1 : 0.3;
      g.fillStyle = b.own ? colors.own : colors[b.kind];
      g.beginPath(); g.arc(x, y, r, 0, 7); g.fill();
      if (b.kind === 'player') {
        g.strokeStyle = '#fff';
        g.beginPath(); g.moveTo(x, y); g.lineTo(x + Math.cos(b.aim) * r * 1.8, y + Math.sin(b.aim) * r * 1.8); g.stroke();
        g.fillStyle = '#eee';
        g.fillText(`${nameOf(b.player)}${b.own ? ' (you)' : ''} ${b.score}${away ? ' (connection interrupted)' : ''}`, x - r, y - r - 10);
      }
      g.fillStyle = '#2c2';
      g.fillRect(x - r, y - r - 6, 2 * r * b.hp / 100, 3);
      g.globalAlpha = 1;
    }
    minimap(g, f, w, h);
    // Shots: the client's prediction in white; with the overlay, the
    // server's lag-compensated judgement in red over it.
    for (const s of f.shots) {
      if (s.server && !page.overlay) continue;
      g.globalAlpha = 1 - s.age;
      g.strokeStyle = s.server ? '#f44' : '#fff';
      g.setLineDash(s.server ? [6, 4] : []);
      g.beginPath(); g.moveTo(sx(s.fromX), sy(s.fromY)); g.lineTo(sx(s.toX), sy(s.toY)); g.stroke();
      if (s.hit) { g.beginPath(); g.arc(sx(s.toX), sy(s.toY), (s.server ? 0.7 : 0.55) * scale, 0, 7); g.stroke(); }
      g.setLineDash([]);
      g.globalAlpha = 1;
    }
  }

  // The whole arena in a corner: every player and NPC the client knows.
  function minimap(g, f, w, h) {
    const size = Math.min(200, Math.min(w, h) / 3), x0 = w - size - 8, y0 = h - size - 8, k = size / 256;
    g.fillStyle = '#000b';
    g.fillRect(x0, y0, size, size);
    g.strokeStyle = '#556';
    g.strokeRect(x0, y0, size, size);
    for (const b of f.bodies) {
      if (b.kind === 'projectile') continue;
      g.fillStyle = b.own ? colors.own : colors[b.kind];
      const r = b.kind === 'player' ? 4 : 1.5;
      g.beginPath(); g.arc(x0 + b.x * k, y0 + b.y * k, r, 0, 7); g.fill();
      if (b.kind === 'player') { g.fillStyle = '#eee'; g.fillText(nameOf(b.player), x0 + b.x * k + 5, y0 + b.y * k - 5); }
    }
  }

  function overlayText(f) {
    const n = f.net;
    const kb = (v) => (v / 1024).toFixed(1) + ' KiB/s';
    return [
      `transport      ${page.transport}`,
      `rtt            ${n.rttMs.toFixed(1)} ms`,
      `jitter         ${n.jitterMs.toFixed(1)} ms`,
      `loss (up)      ${(n.loss * 100).toFixed(1)} %`,
      `clock lead     ${n.leadTicks.toFixed(2)} ticks`,
      `interp delay   ${n.interpDelayMs.toFixed(1)} ms (target ${n.interpTargetMs.toFixed(1)})`,
      `rollbacks      ${n.rollbacksPerFrame.toFixed(2)} /frame`,
      `resimulated    ${n.resimPerFrame.toFixed(2)} ticks/frame`,
      `corrections    ${n.corrections} (max ${n.correctionMaxM.toFixed(2)} m)`,
      `down           ${kb(n.bytesInPerSec)}`,
      `up             ${kb(n.bytesOutPerSec)}`,
      `desyncs        ${n.desyncs} · resyncs ${n.resyncs}`,
      `entities       ${n.entities} · tick ${f.tick}`,
      `shots          white: predicted · red: server's lag-compensated view`,
    ].join('\n');
  }

  function loop() {
    // Armed first: a frame that throws must not stop the page drawing.
    requestAnimationFrame(loop);
    const s = page.session;
    if (s && s.frame) {
      const f = JSON.parse(s.frame());
      page.frame = f;
      draw(f);
      if (page.overlay) $('overlay').textContent = overlayText(f);
      const st = document.body.dataset.state;
      if (f.rejoining && st === 'playing') {
        state('rejoining', 'connection lost: coming back into your slot…');
      } else if (!f.rejoining && st === 'rejoining' && !f.ended) {
        state('playing', `playing as ${nameOf(f.self)}`);
      }
      if ((f.ended || page.ended) && document.body.dataset.state !== 'ended') {
        state('ended', 'ended: ' + (f.ended || page.ended));
        // A spectator tunes in again, with a new spectator token.
        if (page.spectator) setTimeout(() => location.reload(), 1000);
      }
    }
  }

  // built fetches one file of the client, asking again while the server
  // builds it (503), and shows how far the build is.
  async function built(path) {
    for (;;) {
      const r = await fetch(path, { cache: 'no-cache' });
      if (r.status !== 503) return r;
      const why = (await r.text()).trim();
      page.building = (page.building || 0) + 1; // 503s seen, for tests
      if (!page.error) state('building', why || 'building the browser client…');
      await new Promise((res) => setTimeout(res, 500));
    }
  }

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = src;
      s.onload = resolve;
      s.onerror = () => reject(new Error('could not load ' + src));
      document.head.append(s);
    });
  }

  async function main() {
    if (params.get('overlay') === '1') { page.overlay = true; $('overlay').hidden = false; }
    const cfg = await (await fetch('/play/config.json', { cache: 'no-store' })).json();
    let token = takeToken();
    const game = sessionStorage.getItem('tickwire.game');
    sessionStorage.removeItem('tickwire.game');
    if (!token && cfg.demo) {
      // No game of one's own: watch the demo game as a spectator.
      const r = await fetch(cfg.demo, { method: 'POST' });
      if (r.ok) { token = (await r.json()).token; page.spectator = true; }
    }
    if (!token) {
      fail('No game to join: this page opens the game the lobby assigned you.', { href: cfg.lobby, text: 'Go to the lobby' });
      return;
    }
    state('loading', 'loading the client…');
    if (page.spectator) $('controls').textContent = 'watching: no avatar of your own';
    // The loader and the module come from the server's build of the
    // client, which may still run (503): wait for both, in any order.
    const [loader, resp] = await Promise.all([built('/play/wasm_exec.js'), built('/play/client.wasm')]);
    if (!loader.ok) { fail('The client could not be loaded: ' + (await loader.text())); return; }
    if (!resp.ok) { fail('The client could not be loaded: ' + (await resp.text())); return; }
    await loadScript('/play/wasm_exec.js');
    const go = new Go();
    const { instance } = await WebAssembly.instantiate(await resp.arrayBuffer(), go.importObject);
    go.run(instance);

    let session = null;
    const queued = [];
    const onPacket = (b) => { if (session) session.push(b); else queued.push(b); };
    const want = params.get('transport') || 'auto';
    let tr = null;
    if (want !== 'websocket' && cfg.webtransport && typeof WebTransport !== 'undefined') {
      state('connecting', 'opening WebTransport…');
      try { tr = await openWebTransport(cfg, onPacket); } catch (e) {
        console.warn('WebTransport failed, falling back to WebSocket:', e);
        if (want === 'webtransport') { fail('WebTransport failed: ' + e.message); return; }
      }
    }
    if (!tr) {
      if (!cfg.websocket) { fail('No transport: WebTransport is unavailable and the server offers no WebSocket.'); return; }
      state('connecting', 'opening WebSocket…');
      tr = await openWebSocket(cfg, onPacket);
    }
    page.transport = tr.name;
    document.body.dataset.transport = tr.name;
    $('transport').textContent = tr.name;
    state('connecting', 'joining the game…');
    session = tickwireConnect(token, tr.send);
    for (const b of queued.splice(0)) session.push(b);
    try {
      await session.ready;
    } catch (e) {
      fail('Could not join the game: ' + e, { href: cfg.lobby, text: 'Back to the lobby' });
      return;
    }
    page.session = session;
    state('playing', page.spectator ? 'watching the demo game' : `playing as ${nameOf(session.slot)}`);
    if (game && token && !page.spectator) followNames(game);
    sendInput();
  }

  requestAnimationFrame(loop);
  main().catch((e) => fail(String(e)));
})();
