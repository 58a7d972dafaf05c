// The live dashboard: polls /api/stats once a second and draws the last
// minute of every connection's RTT, loss and bandwidth as small charts.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const N = 60;                 // samples kept per series
  const hist = new Map();       // key -> array of numbers
  const svgNS = 'http://www.w3.org/2000/svg';

  function push(key, v) {
    let a = hist.get(key);
    if (!a) { a = []; hist.set(key, a); }
    a.push(Number.isFinite(v) ? v : 0);
    if (a.length > N) a.shift();
    return a;
  }

  // spark draws series (arrays) into an svg as polylines on a shared scale.
  function spark(svg, series) {
    let max = 0;
    for (const s of series) for (const v of s) max = Math.max(max, v);
    if (max <= 0) max = 1;
    const lines = series.map((s, i) => {
      // Newest sample at the right edge; the line grows leftwards.
      const off = N - s.length;
      const pts = s.map((v, j) => `${((off + j) * 120 / (N - 1)).toFixed(1)},${(29 - v / max * 28).toFixed(1)}`).join(' ');
      const p = document.createElementNS(svgNS, 'polyline');
      p.setAttribute('points', pts);
      if (i > 0) p.setAttribute('class', 'alt');
      return p;
    });
    const title = document.createElementNS(svgNS, 'title');
    title.textContent = 'max ' + fmt(max);
    svg.replaceChildren(title, ...lines);
  }

  function newSpark() {
    const s = document.createElementNS(svgNS, 'svg');
    s.setAttribute('class', 'spark');
    s.setAttribute('viewBox', '0 0 120 30');
    s.setAttribute('preserveAspectRatio', 'none');
    return s;
  }

  function fmt(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
  function rate(bps) {
    if (bps >= 1e6) return (bps / 1e6).toFixed(2) + ' MB/s';
    if (bps >= 1e3) return (bps / 1e3).toFixed(1) + ' kB/s';
    return bps.toFixed(0) + ' B/s';
  }

  function td(cls, ...kids) {
    const e = document.createElement('td');
    if (cls) e.className = cls;
    e.append(...kids);
    return e;
  }

  function render(st) {
    const lobby = st.lobby;
    $('n-rooms').textContent = lobby.rooms;
    $('n-waiting').textContent = lobby.players;
    $('n-sockets').textContent = lobby.sockets;
    if (st.fleet && $('fleet-body')) renderFleet(st.fleet);
    const srv = st.server;
    if (!srv) {
      $('n-games').textContent = '–';
      $('n-players').textContent = '–';
      return;
    }
    $('n-games').textContent = srv.games.length;
    $('n-players').textContent = srv.players;
    const t = srv.tick;
    $('tick-text').textContent = `${t.rateHz} Hz (budget ${fmt(t.budgetMs)} ms) · last ${fmt(t.lastMs)} ms · ` +
      `mean ${fmt(t.meanMs)} ms · max ${fmt(t.maxMs)} ms · ${t.ticks} ticks`;
    spark($('tick-chart'), [push('tick.mean', t.meanMs), push('tick.max', t.maxMs)]);

    const live = new Set(['tick.mean', 'tick.max']);
    const games = $('games-body');
    games.replaceChildren(...srv.games.map((g) => {
      const tr = document.createElement('tr');
      tr.dataset.game = g.id;
      const type = td('', g.type);
      if (g.timeline) {
        // The game's live timeline (tickwire-server -record).
        const a = document.createElement('a');
        a.href = g.timeline;
        a.textContent = 'timeline';
        a.className = 'timeline';
        type.append(' · ', a);
      }
      tr.append(type, td('n', g.id), td('n', String(g.tick)),
        td('n', String(g.connections.length)), td('n opt', String(g.entities)));
      return tr;
    }));
    $('no-games').hidden = srv.games.length > 0;
    const rows = [];
    for (const g of srv.games) {
      for (const c of g.connections) {
        const k = `${g.id}/${c.clientId}`;
        for (const s of ['rtt', 'loss', 'send', 'recv']) live.add(`${k}.${s}`);
        const rtt = newSpark(), loss = newSpark(), bw = newSpark();
        spark(rtt, [push(k + '.rtt', c.rttMs)]);
        spark(loss, [push(k + '.loss', c.loss * 100)]);
        spark(bw, [push(k + '.send', c.sendBps), push(k + '.recv', c.recvBps)]);
        const tr = document.createElement('tr');
        tr.dataset.client = c.clientId;
        tr.append(
          td('', c.addr || c.clientId),
          td('opt n', `${g.id.slice(0, 6)}… / ${(c.players || []).join(', ')}`),
          td('n', `${fmt(c.rttMs)} ±${fmt(c.jitterMs)}`), td('', rtt),
          td('n', `${(c.loss * 100).toFixed(1)} %`), td('', loss),
          td('n', `${rate(c.sendBps)} / ${rate(c.recvBps)}`), td('', bw));
        rows.push(tr);
      }
    }
    $('conns-body').replaceChildren(...rows);
    for (const k of hist.keys()) if (!live.has(k)) hist.delete(k);
  }

  // renderFleet lists the fleet's servers: health, load as a bar, tick p99
  // against the budget.
  function renderFleet(servers) {
    $('fleet-body').replaceChildren(...servers.map((f) => {
      const tr = document.createElement('tr');
      tr.dataset.server = f.id;
      tr.dataset.healthy = f.healthy;
      const health = document.createElement('span');
      health.className = 'badge';
      health.dataset.state = f.healthy ? 'live' : 'offline';
      health.textContent = f.healthy ? 'healthy' : f.why;
      const used = f.capacity > 0 ? (f.players + f.reserved) / f.capacity : 1;
      const bar = document.createElement('meter');
      bar.min = 0; bar.max = 1; bar.high = 0.8; bar.value = used;
      bar.title = `${(used * 100).toFixed(0)} % in use or reserved`;
      tr.append(td('', f.name), td('', health),
        td('n', `${f.players} (+${f.reserved} reserved) / ${f.capacity}`), td('', bar),
        td('n', String(f.games)), td('n', `${fmt(f.tickP99Ms)} / ${fmt(f.tickBudgetMs)} ms`),
        td('opt', f.types.join(', ')), td('opt', f.addrs.join(' ')));
      return tr;
    }));
  }

  async function tick() {
    try {
      const res = await fetch('/api/stats', { cache: 'no-store' });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      render(await res.json());
      $('conn').dataset.state = 'live';
      $('conn').textContent = 'live';
      $('error').hidden = true;
    } catch (e) {
      $('conn').dataset.state = 'offline';
      $('conn').textContent = 'offline';
      $('error').textContent = 'Cannot reach the lobby: ' + e.message;
      $('error').hidden = false;
    }
    setTimeout(tick, 1000);
  }
  tick();
})();
