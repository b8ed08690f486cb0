// The Sayri web bubble. Talks to the daemon's protocol through the server's WebSocket bridge.
//
// Rule for everything drawn here: text from outside (the model, commands, other clients,
// session titles, agent names) is only ever put into the page as text nodes or attribute values
// that are not URLs. Elements are made with document.createElement; markup is never parsed.
// Links are made only for http: and https: targets, never for loopback hosts (the login cookie
// is sent to every port of 127.0.0.1), and always open with rel="noopener noreferrer".
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------------------------------
  // DOM helpers: every child is appended as a node; strings become text nodes.

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'className') node.className = value;
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // ------------------------------------------------------------------------------------------
  // Markdown, rendered from text into nodes (paragraphs, headings, lists, fenced and inline
  // code, bold and italics, http(s) links).

  const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)$/i;

  // A URL the page may link to, or null.
  function safeHref(target) {
    let url;
    try {
      url = new URL(target);
    } catch (e) {
      return null;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    if (LOOPBACK.test(url.hostname)) return null;
    return url.href;
  }

  function linkOrText(label, target) {
    const href = safeHref(target);
    if (href === null) {
      return el('span', { className: 'link-text' }, label + ' (' + target + ')');
    }
    return el('a', { href: href, rel: 'noopener noreferrer', target: '_blank' }, label);
  }

  const INLINE = /`([^`\n]+)`|!\[([^\]\n]*)\]\(([^)\s]*)\)|\[([^\]\n]+)\]\(([^)\s]*)\)|\*\*(\S(?:[^*\n]*\S)?)\*\*|\*(\S(?:[^*\n]*\S)?)\*/g;

  // Appends `text` with inline markdown to `parent`.
  function inline(parent, text) {
    let last = 0;
    INLINE.lastIndex = 0;
    let m;
    while ((m = INLINE.exec(text)) !== null) {
      if (m.index > last) parent.append(text.slice(last, m.index));
      if (m[1] !== undefined) parent.append(el('code', {}, m[1]));
      else if (m[3] !== undefined) parent.append(linkOrText(m[2] || m[3], m[3]));
      else if (m[5] !== undefined) parent.append(linkOrText(m[4], m[5]));
      else if (m[6] !== undefined) parent.append(el('strong', {}, m[6]));
      else if (m[7] !== undefined) parent.append(el('em', {}, m[7]));
      last = INLINE.lastIndex;
    }
    if (last < text.length) parent.append(text.slice(last));
  }

  // Renders markdown `text` into `container` (replacing what it holds).
  function renderMarkdown(container, text) {
    clear(container);
    const lines = text.replace(/\r\n?/g, '\n').split('\n');
    let para = [];
    let list = null;
    const flushPara = () => {
      if (para.length) {
        const p = el('p');
        inline(p, para.join('\n'));
        container.append(p);
        para = [];
      }
    };
    const flushList = () => {
      if (list) {
        container.append(list.node);
        list = null;
      }
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = /^\s*```\s*([\w+-]*)\s*$/.exec(line);
      if (fence) {
        flushPara();
        flushList();
        const body = [];
        i++;
        while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) body.push(lines[i++]);
        const code = el('code', fence[1] ? { 'data-lang': fence[1] } : {}, body.join('\n'));
        container.append(el('pre', {}, code));
        continue;
      }
      const item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
      if (item) {
        flushPara();
        const kind = item[1] ? 'ul' : 'ol';
        if (!list || list.kind !== kind) {
          flushList();
          list = { kind: kind, node: el(kind) };
        }
        const li = el('li');
        inline(li, item[3]);
        list.node.append(li);
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        flushPara();
        flushList();
        const h = el('h' + Math.min(6, heading[1].length + 2));
        inline(h, heading[2]);
        container.append(h);
        continue;
      }
      if (line.trim() === '') {
        flushPara();
        flushList();
        continue;
      }
      flushList();
      para.push(line);
    }
    flushPara();
    flushList();
  }

  // ------------------------------------------------------------------------------------------
  // The connection: requests with ids, events to handlers, reconnection with backoff.

  const state = {
    ws: null,
    nextId: 1,
    pending: new Map(),
    retryMs: 500,
    sessionId: null,
    agentId: null,
    answer: null, // { node, text } of the answer being streamed
    cards: new Map(), // request id -> { node, timer }
  };

  function setConn(text, down) {
    const conn = $('conn');
    conn.textContent = text;
    conn.classList.toggle('down', !!down);
  }

  function setEnabled(on) {
    for (const id of ['input', 'send', 'agent-select', 'new-chat']) $(id).disabled = !on;
  }

  function notice(text) {
    const n = $('notice');
    n.textContent = text || '';
    n.hidden = !text;
  }

  function call(cmd, params) {
    return new Promise((resolve, reject) => {
      const ws = state.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) {
        reject(new Error('not connected to Sayri'));
        return;
      }
      const id = state.nextId++;
      state.pending.set(id, { resolve: resolve, reject: reject });
      ws.send(JSON.stringify({ cmd: cmd, params: params || {}, id: id }));
    });
  }

  function connect() {
    setConn('Connecting…', true);
    const ws = new WebSocket('ws://' + location.host + '/ws');
    state.ws = ws;
    ws.addEventListener('message', (e) => {
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch (err) {
        return;
      }
      if (msg && typeof msg.event === 'string') {
        onEvent(msg);
        return;
      }
      const waiter = state.pending.get(msg.id);
      if (!waiter) return;
      state.pending.delete(msg.id);
      if (msg.ok) waiter.resolve(msg.result);
      else waiter.reject(new Error(msg.error || 'the request failed'));
    });
    ws.addEventListener('close', () => {
      if (state.ws !== ws) return;
      state.ws = null;
      for (const waiter of state.pending.values()) waiter.reject(new Error('connection lost'));
      state.pending.clear();
      for (const id of Array.from(state.cards.keys())) removeCard(id);
      setEnabled(false);
      const wait = state.retryMs;
      state.retryMs = Math.min(state.retryMs * 2, 5000);
      setConn('Not connected to Sayri — retrying in ' + Math.round(wait / 100) / 10 + ' s', true);
      setTimeout(connect, wait);
    });
  }

  // ------------------------------------------------------------------------------------------
  // The transcript

  function scrollDown() {
    const t = $('transcript');
    t.scrollTop = t.scrollHeight;
  }

  function addItem(node) {
    $('transcript').append(node);
    scrollDown();
    return node;
  }

  // A line the person said, with a "Remember this" button that keeps it as a fact of
  // long-term memory (its label is drawn by CSS, so the line's text stays what was said).
  function addUser(text) {
    const keep = el('button', {
      className: 'remember',
      type: 'button',
      title: 'Remember this',
      'aria-label': 'Remember this',
    });
    keep.addEventListener('click', () => {
      keep.disabled = true;
      call('memory_add', { text: text })
        .then((fact) => notice('Remembered as fact ' + fact.id + ' (sayri memory list shows it).'))
        .catch((e) => {
          keep.disabled = false;
          notice('Not remembered: ' + e.message);
        });
    });
    addItem(el('li', { className: 'msg-user', 'aria-label': 'You said' }, text, keep));
  }

  function addError(text) {
    addItem(el('li', { className: 'msg-error', role: 'alert' }, text));
  }

  function answerNode() {
    if (!state.answer) {
      const body = el('div', { className: 'answer-body' });
      const node = el('li', { className: 'msg-assistant', 'aria-label': 'Sayri said' }, body);
      addItem(node);
      state.answer = { node: node, body: body, text: '' };
    }
    return state.answer;
  }

  function addAnswer(text) {
    const a = answerNode();
    a.text = text;
    renderMarkdown(a.body, text);
    state.answer = null;
  }

  // A command step: the command, then (when finished) its exit code and output.
  function addToolStep(command) {
    const code = el('code', {}, command);
    const status = el('span', { className: 'exit' }, 'running…');
    const output = el('pre', { className: 'tool-output' });
    const details = el('details', {}, el('summary', {}, 'Command ', code, ' — ', status), output);
    const node = el('li', { className: 'msg-tool', 'data-command': command }, details);
    node.sayriStatus = status;
    node.sayriOutput = output;
    addItem(node);
    return node;
  }

  function finishToolStep(node, exitCode, output, statusText) {
    const ok = exitCode === 0;
    node.sayriStatus.textContent =
      exitCode === null || exitCode === undefined ? statusText || 'no exit code' : 'exit ' + exitCode;
    node.sayriStatus.className = ok ? 'exit exit-ok' : 'exit exit-bad';
    node.sayriOutput.textContent = output || '';
  }

  function openToolStep(command) {
    const steps = $('transcript').querySelectorAll('li.msg-tool');
    for (let i = steps.length - 1; i >= 0; i--) {
      if (steps[i].dataset.command === command && !steps[i].dataset.done) return steps[i];
    }
    return addToolStep(command);
  }

  function renderSession(session) {
    clear($('transcript'));
    state.answer = null;
    for (const m of session.messages || []) {
      if (m.tool_call) {
        const step = addToolStep(m.tool_call.command || '');
        step.dataset.done = '1';
        finishToolStep(step, m.tool_call.exit_code, m.tool_call.output, m.tool_call.status);
      } else if (m.role === 'user') {
        addUser(m.content || '');
      } else if (m.role === 'assistant') {
        addAnswer(m.content || '');
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Permission cards

  function removeCard(id) {
    const card = state.cards.get(id);
    if (!card) return;
    clearInterval(card.timer);
    card.node.remove();
    state.cards.delete(id);
  }

  function addCard(req) {
    if (!req || typeof req.id !== 'string' || state.cards.has(req.id)) return;
    const titleId = 'card-title-' + req.id;
    const bodyId = 'card-body-' + req.id;
    const segments = el('ul', { className: 'segments', 'aria-label': 'What each part of it would do' });
    for (const s of req.segments || []) {
      segments.append(
        el('li', { className: 'seg-' + s.effect }, el('code', {}, s.command), ' — ' + s.effect + (s.reason ? ': ' + s.reason : '')),
      );
    }
    const countdown = el('span', { className: 'countdown', role: 'timer', 'aria-live': 'off' });
    const allow = el('button', { type: 'button', className: 'allow' }, 'Allow');
    const always = el('button', { type: 'button', className: 'always' }, 'Allow always');
    const deny = el('button', { type: 'button', className: 'deny' }, 'Deny');
    if (req.policy) always.hidden = true;
    const node = el(
      'article',
      { className: 'card', role: 'alertdialog', 'aria-labelledby': titleId, 'aria-describedby': bodyId, 'data-request': req.id },
      el('h2', { id: titleId }, (req.agent_name || req.agent_id || 'Sayri') + ' asks to ' + (req.action === 'shell' ? 'run a command' : req.action)),
      el('div', { id: bodyId }, el('pre', { className: 'resource' }, el('code', {}, req.resource || '')), req.reason ? el('p', { className: 'reason' }, req.reason) : null, segments),
      el('div', { className: 'actions' }, allow, always, deny, countdown),
    );
    const buttons = [allow, always, deny];
    const answer = (allowIt, remember) => {
      for (const b of buttons) b.disabled = true;
      call('permission_answer', { request_id: req.id, allow: allowIt, remember: remember })
        .then((r) => {
          if (!r || !r.delivered) countdown.textContent = 'This question is no longer open.';
        })
        .catch((e) => {
          countdown.textContent = e.message;
          for (const b of buttons) b.disabled = false;
        });
    };
    allow.addEventListener('click', () => answer(true, false));
    always.addEventListener('click', () => answer(true, true));
    deny.addEventListener('click', () => answer(false, false));
    node.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') answer(false, false);
    });
    const deadline = Date.now() + Math.max(0, Number(req.expires_in) || 0) * 1000;
    const tick = () => {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (left > 0) {
        countdown.textContent = 'Denied automatically in ' + left + ' s';
      } else {
        countdown.textContent = 'Expired (denied)';
        for (const b of buttons) b.disabled = true;
        clearInterval(card.timer);
      }
    };
    const card = { node: node, timer: setInterval(tick, 1000) };
    tick();
    state.cards.set(req.id, card);
    $('cards').append(node);
    deny.focus();
  }

  // ------------------------------------------------------------------------------------------
  // Sessions and agents

  function refreshSessions() {
    return call('sessions_list', { limit: 30 })
      .then((list) => {
        const ul = $('sessions');
        clear(ul);
        for (const s of list || []) {
          const b = el('button', { type: 'button', 'aria-current': s.id === state.sessionId ? 'true' : 'false' }, s.title || 'Untitled conversation');
          b.addEventListener('click', () => openSession(s.id));
          ul.append(el('li', { 'data-session': s.id }, b));
        }
      })
      .catch((e) => notice(e.message));
  }

  function openSession(id) {
    return call('switch_session', { session_id: id })
      .then(() => {
        state.sessionId = id;
        return loadSession();
      })
      .catch((e) => notice(e.message));
  }

  function loadSession() {
    if (!state.sessionId) return Promise.resolve();
    return call('session_get', { session_id: state.sessionId })
      .then((s) => {
        renderSession(s);
        return refreshSessions();
      })
      .catch(() => {
        clear($('transcript'));
        return refreshSessions();
      });
  }

  function refreshAgents() {
    return call('agents_list', {})
      .then((agents) => {
        const select = $('agent-select');
        clear(select);
        for (const a of agents || []) {
          const label = a.error ? a.name + ' (cannot be used)' : a.name || a.id;
          select.append(el('option', { value: a.id, disabled: !!a.error, selected: a.id === state.agentId }, label));
        }
      })
      .catch((e) => notice(e.message));
  }

  // ------------------------------------------------------------------------------------------
  // Events from the daemon

  function onReady(info) {
    state.retryMs = 500;
    state.sessionId = info.session_id || null;
    state.agentId = info.agent && (info.agent.id || info.agent);
    setConn('Connected' + (info.busy ? ' — working…' : ''), false);
    setEnabled(true);
    $('stop').hidden = !info.busy;
    notice('');
    refreshAgents();
    loadSession();
    call('permission_list', {})
      .then((r) => {
        for (const req of (r && r.pending) || []) addCard(req);
      })
      .catch(() => {});
  }

  function onEvent(ev) {
    switch (ev.event) {
      case 'ready':
        onReady(ev.info || {});
        break;
      case 'user':
        addUser(ev.text || '');
        break;
      case 'assistant_delta': {
        const a = answerNode();
        a.text += ev.delta || '';
        renderMarkdown(a.body, a.text);
        scrollDown();
        break;
      }
      case 'assistant_done':
        addAnswer(ev.text || '');
        refreshSessions();
        break;
      case 'tool_start':
        state.answer = null;
        addToolStep(ev.command || '');
        break;
      case 'tool_finish': {
        const step = openToolStep(ev.command || '');
        step.dataset.done = '1';
        finishToolStep(step, ev.exit_code, ev.output, null);
        break;
      }
      case 'busy':
        $('stop').hidden = !ev.active;
        setConn(ev.active ? 'Connected — working…' : 'Connected', false);
        break;
      case 'permission_request':
        addCard(ev.request);
        break;
      case 'permission_resolved':
        removeCard(ev.request_id);
        break;
      case 'conversation_started':
        state.sessionId = ev.session_id || null;
        clear($('transcript'));
        state.answer = null;
        refreshSessions();
        break;
      case 'error':
        addError(ev.error || 'Something went wrong.');
        break;
      case 'hint':
        setConn(ev.text || 'Connected', false);
        break;
      case 'shutdown':
        setConn('Sayri is stopping…', true);
        break;
      default:
        break;
    }
  }

  // ------------------------------------------------------------------------------------------
  // The composer

  function send() {
    const input = $('input');
    const text = input.value.trim();
    if (!text) return;
    input.value = '';
    notice('');
    call('talk', { text: text }).then(
      (r) => {
        if (r && r.session_id && r.session_id !== state.sessionId) {
          state.sessionId = r.session_id;
          refreshSessions();
        }
      },
      (e) => {
        notice(e.message);
        input.value = text;
      },
    );
  }

  function start() {
    $('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      send();
    });
    $('input').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send();
      }
    });
    $('stop').addEventListener('click', () => call('interrupt', {}).catch((e) => notice(e.message)));
    $('new-chat').addEventListener('click', () =>
      call('new_conversation', {})
        .then((r) => {
          state.sessionId = r && r.session_id;
          clear($('transcript'));
          refreshSessions();
          $('input').focus();
        })
        .catch((e) => notice(e.message)),
    );
    $('agent-select').addEventListener('change', (e) => {
      const id = e.target.value;
      call('agent_switch', { agent_id: id })
        .then(() => {
          state.agentId = id;
          notice('');
        })
        .catch((err) => {
          notice(err.message);
          refreshAgents();
        });
    });
    connect();
  }

  start();
})();
