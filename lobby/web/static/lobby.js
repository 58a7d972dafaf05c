// The lobby page of one game type: a WebSocket to the lobby shows the open
// games live; creating or joining one seats you in it, where you ready up
// and chat until everyone is ready and the lobby hands out the game.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const gameType = document.body.dataset.type;
  let ws = null;
  let me = null;       // my player name once seated
  let room = null;     // my room's RoomInfo
  let assigned = false;
  let retry = 0;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const k of kids) e.append(k);
    return e;
  }

  function setConn(state) {
    const b = $('conn');
    b.dataset.state = state;
    b.textContent = state;
  }

  function showError(msg) {
    const e = $('error');
    e.textContent = msg;
    e.hidden = !msg;
  }

  function connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    ws = new WebSocket(`${proto}//${location.host}/games/${encodeURIComponent(gameType)}/ws`);
    ws.onopen = () => { retry = 0; setConn('live'); };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      handle(m);
    };
    ws.onclose = (ev) => {
      document.body.dataset.closeCode = String(ev.code);
      if (assigned) {
        setConn('done');
        $('closed-note').textContent = `The lobby closed the connection (${ev.code}${ev.reason ? ' ' + ev.reason : ''}).`;
        return;
      }
      setConn('offline');
      if (room) {
        room = null; me = null;
        showView('browse');
        showError('Lost the connection to the lobby; you left the game.');
      }
      retry = Math.min(retry + 1, 5);
      setTimeout(connect, 1000 * retry);
    };
  }

  function send(obj) {
    showError('');
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      showError('Not connected to the lobby yet, try again in a moment.');
      return;
    }
    ws.send(JSON.stringify(obj));
  }

  function showView(name) {
    for (const v of ['browse', 'room', 'assigned']) $(v).hidden = v !== name;
  }

  function handle(m) {
    switch (m.type) {
      case 'rooms': renderRooms(m.rooms || []); quickPlay(); break;
      case 'joined':
        me = m.player;
        $('chat-log').replaceChildren();
        for (const c of m.chat || []) addChat(c);
        renderRoom(m.room);
        showView('room');
        break;
      case 'room':
        renderRoom(m.room);
        if (m.event) $('event').textContent = m.event;
        break;
      case 'chat': addChat(m); break;
      case 'left': room = null; me = null; showView('browse'); break;
      case 'error': showError(m.error); break;
      case 'assigned': assigned = true; renderAssigned(m.assignment); break;
    }
  }

  function renderRooms(rooms) {
    const list = $('rooms');
    list.replaceChildren(...rooms.map((r) => {
      const full = r.players.length >= r.maxPlayers;
      const join = el('button', { class: 'join', type: 'button', disabled: full }, full ? 'Full' : 'Join');
      join.addEventListener('click', () => {
        const player = $('player').value.trim();
        if (!player) { showError('Enter your name first.'); $('player').focus(); return; }
        send({ op: 'join', room: r.id, player });
      });
      const names = r.players.map((p) => p.name + (p.ready ? ' ✓' : '')).join(', ');
      return el('li', { class: 'room', 'data-room': r.id, 'data-name': r.name },
        el('div', {},
          el('strong', {}, r.name), ' ',
          el('span', { class: 'meta' }, `${r.players.length}/${r.maxPlayers} · ${r.hosting}-hosted`),
          el('div', { class: 'meta' }, names)),
        join);
    }));
    $('no-rooms').hidden = rooms.length > 0;
  }

  function renderRoom(r) {
    room = r;
    $('room-name').textContent = r.name;
    $('room-meta').textContent = `${r.players.length}/${r.maxPlayers} players · ` +
      `starts when ${r.minPlayers === 1 ? 'everyone is ready' : `at least ${r.minPlayers} players are in and all are ready`} · ${r.hosting}-hosted`;
    $('ready-port-field').hidden = r.hosting !== 'peer';
    let myReady = false;
    $('players').replaceChildren(...r.players.map((p) => {
      if (p.name === me) myReady = p.ready;
      const li = el('li', { 'data-player': p.name },
        el('span', {}, p.name + (p.name === me ? ' (you)' : '') + (p.canHost ? ' · can host' : '')),
        el('span', { class: 'state' }, p.ready ? '✓ ready' : 'not ready'));
      if (p.ready) li.classList.add('ready');
      if (p.name === me) li.classList.add('me');
      return li;
    }));
    const b = $('ready');
    b.dataset.ready = String(myReady);
    b.textContent = myReady ? 'Ready ✓ (click to undo)' : "I'm ready";
    b.classList.toggle('is-ready', myReady);
  }

  function addChat(c) {
    const log = $('chat-log');
    log.append(el('li', {}, el('span', { class: 'from' }, c.from + ':'), c.text));
    log.scrollTop = log.scrollHeight;
  }

  // With a play page (Config.PlayURL), a server-hosted game opens in
  // the browser as soon as it is assigned; the token stays in this tab.
  function play(a) {
    const url = document.body.dataset.play;
    if (!url || a.hosting !== 'server' || a.role !== 'player') return false;
    sessionStorage.setItem('tickwire.token', a.token);
    sessionStorage.setItem('tickwire.game', a.gameId); // the play page asks the lobby for the players' names
    // The play page's own options pass through (?transport=websocket).
    const q = new URLSearchParams(location.search), pass = new URLSearchParams();
    for (const k of ['transport', 'wt', 'overlay']) if (q.has(k)) pass.set(k, q.get(k));
    location.assign(url + (pass.size ? '?' + pass : ''));
    return true;
  }

  // "Play now" (?quick=1): a name if there is none, then the lobby puts
  // the player in the running "Play now" game with the most players and a
  // free seat, or starts one (lobby/quick.go).
  const quick = new URLSearchParams(location.search).get('quick') === '1' && document.body.dataset.play;
  let quickDone = false;
  function quickPlay() {
    if (!quick || quickDone) return;
    quickDone = true;
    if (!$('player').value.trim()) $('player').value = 'player-' + Math.floor(1000 + Math.random() * 9000);
    send({ op: 'quick', player: $('player').value.trim() });
  }

  function renderAssigned(a) {
    if (play(a)) return;
    $('game-id').textContent = a.gameId;
    $('host').textContent = a.host;
    $('port').textContent = String(a.port);
    $('slot').textContent = String(a.slot);
    $('role').textContent = a.role;
    $('expires').textContent = new Date(a.expires).toLocaleTimeString();
    $('token').value = a.token;
    $('host-key-field').hidden = !a.hostKey;
    $('host-key').value = a.hostKey || '';
    showView('assigned');
  }

  $('create-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const player = $('player').value.trim();
    if (!player) { showError('Enter your name first.'); $('player').focus(); return; }
    const f = new FormData(ev.target);
    const req = {
      op: 'create', player,
      name: String(f.get('name') || '').trim(),
      maxPlayers: Number(f.get('maxPlayers')) || 0,
      hosting: String(f.get('hosting') || ''),
    };
    const port = Number(f.get('hostPort'));
    if (req.hosting === 'peer' && port) req.hostPort = port;
    send(req);
  });

  for (const r of document.querySelectorAll('input[name=hosting]')) {
    r.addEventListener('change', () => {
      $('host-port-field').hidden = document.querySelector('input[name=hosting]:checked').value !== 'peer';
    });
  }
  $('host-port-field').hidden = (document.querySelector('input[name=hosting]:checked') || {}).value !== 'peer';

  $('ready').addEventListener('click', () => {
    const ready = $('ready').dataset.ready !== 'true';
    const req = { op: ready ? 'ready' : 'unready' };
    const port = Number($('ready-port').value);
    if (ready && room && room.hosting === 'peer' && port) req.hostPort = port;
    send(req);
  });
  $('leave').addEventListener('click', () => send({ op: 'leave' }));
  $('chat-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('chat-text').value.trim();
    if (!text) return;
    send({ op: 'chat', text });
    $('chat-text').value = '';
  });
  $('copy').addEventListener('click', async () => {
    try { await navigator.clipboard.writeText($('token').value); $('copy').textContent = 'Copied'; }
    catch { $('token').select(); }
  });
  const saved = localStorage.getItem('tickwire.player');
  if (saved) $('player').value = saved;
  $('player').addEventListener('change', () => localStorage.setItem('tickwire.player', $('player').value.trim()));

  connect();
})();
