// The websocket to /ws: hello with the session token kept in sessionStorage (and the
// profile key, kept in localStorage by profile.js), automatic
// reconnect with jittered exponential backoff, the 1013 "server full" retry schedule,
// a quick return after 1012 (the server restarts and keeps the game), and no reconnect
// after 4000 (the session was opened in another window). On a sharded deployment
// (`welcome` names a shard) it connects at /ws/<shard>, and follows `wrong_shard`
// to the owner's route, repeating the refused message, without the player noticing
// (docs/PROTOCOL.md, "Shards"). Quick play's `matched {code, shard}` (a table formed
// on another shard) is followed the same way: to that shard's route, then `join_lobby`
// with the name the player queued with.

const TOKEN_KEY = 'wizard.token';
const SHARD_KEY = 'wizard.shard';
/** `wrong_shard` answers followed in a row before the error is shown. */
export const SHARD_HOPS_MAX = 3;
const SHARD_ID = /^[ABCDEFGHJKLMNPQRSTUVWXYZ2-9]$/;
/** Retries after a 1013 close ("try again later") when the server named no time:
 * 15 s, 30 s, then every 60 s. A `busy` with `retry_after_ms` before the close wins. */
export const FULL_RETRY_MS = [15000, 30000, 60000];
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 15000;
/** After a 1012 close (service restart) the client is back after 100-500 ms, spread at
 * random so that a restarted server is not met by every client at once; the usual
 * backoff follows if the server is not up yet. */
export const RESTART_RETRY_MS = [100, 500];

export class Connection {
  /**
   * @param {object} handlers onMessage(msg), onStatus(status, detail) where status is
   *   'connecting' | 'open' | 'reconnecting' | 'full' | 'replaced', and profileKey(),
   *   the profile key `hello` sends (or null)
   */
  constructor(handlers) {
    this.handlers = handlers;
    this.ws = null;
    this.attempt = 0;
    this.fullAttempt = 0;
    this.timer = null;
    this.stopped = false;
    this.welcomed = false;
    this.busyRetryMs = null; // the retry_after_ms of a busy before welcome
    this.lastJoin = null; // the last join_lobby sent, repeated on its shard
    this.lastQuickName = null; // the name of the last quick_play sent, for `matched`
    this.repeat = null; // the message to send again once welcomed
    this.shardHops = 0;
  }

  get shard() {
    try {
      return sessionStorage.getItem(SHARD_KEY);
    } catch {
      return null;
    }
  }

  set shard(value) {
    try {
      if (value) sessionStorage.setItem(SHARD_KEY, value);
      else sessionStorage.removeItem(SHARD_KEY);
    } catch {
      /* private mode */
    }
  }

  forgetToken() {
    try {
      sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      /* private mode */
    }
  }

  /** Follows `wrong_shard` to `shard`'s route: after `hello` with the same token,
   * after `join_lobby` as a new session there (a token is good on its shard only). */
  followShard(ws, shard) {
    this.shardHops += 1;
    if (this.welcomed) {
      if (this.lastJoin) this.repeat = this.lastJoin;
      // Joining elsewhere leaves the current lobby, as a join on one server does.
      ws.send(JSON.stringify({ type: 'leave_lobby' }));
      this.forgetToken();
    }
    this.shard = shard;
    this.ws = null; // its close is not a lost connection
    ws.close(1000);
    this.open();
  }

  get token() {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  }

  set token(value) {
    try {
      sessionStorage.setItem(TOKEN_KEY, value);
    } catch {
      /* private mode: the session lasts as long as the connection */
    }
  }

  url() {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const shard = this.shard;
    return `${scheme}://${location.host}/ws${shard && SHARD_ID.test(shard) ? `/${shard}` : ''}`;
  }

  /** Says hello again on a new connection (the profile key changed): the old one is
   * closed as a normal close, not a lost connection. */
  reconnect() {
    const old = this.ws;
    this.ws = null;
    if (old) old.close(1000);
    this.start();
  }

  start() {
    this.stopped = false;
    clearTimeout(this.timer);
    this.timer = null;
    this.open();
  }

  open() {
    this.welcomed = false;
    this.busyRetryMs = null;
    this.handlers.onStatus(this.attempt === 0 && this.fullAttempt === 0 ? 'connecting' : 'reconnecting');
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    // Lean frames (PROTOCOL.md 7.5): the state this connection holds and its seq.
    this.held = null;
    this.resyncing = false;
    ws.addEventListener('open', () => {
      // The profile key kept in this browser, if any (PROTOCOL.md 7.1).
      const profileKey = this.handlers.profileKey?.() || null;
      ws.send(JSON.stringify({ type: 'hello', token: this.token || null, profile_key: profileKey, deltas: true }));
    });
    ws.addEventListener('message', (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg.type === 'state') {
        this.held = msg;
        this.resyncing = false;
      } else if (msg.type === 'delta') {
        msg = this.patched(ws, msg);
        if (!msg) return;
      }
      if (msg.type === 'error' && msg.code === 'wrong_shard' && SHARD_ID.test(msg.shard ?? '')
        && this.shardHops < SHARD_HOPS_MAX) {
        this.followShard(ws, msg.shard);
        return;
      }
      if (msg.type === 'matched' && SHARD_ID.test(msg.shard ?? '') && typeof msg.code === 'string') {
        // The table is on another shard: join it there as with a shared code.
        this.lastJoin = { type: 'join_lobby', code: msg.code, name: this.lastQuickName ?? '' };
        this.shardHops = 0;
        this.handlers.onMessage(msg);
        this.followShard(ws, msg.shard);
        return;
      }
      if (msg.type === 'welcome') {
        this.token = msg.token;
        this.shard = msg.shard ?? null;
        this.welcomed = true;
        this.attempt = 0;
        this.fullAttempt = 0;
        this.handlers.onStatus('open');
        if (this.repeat) {
          ws.send(JSON.stringify(this.repeat));
          this.repeat = null;
        }
      } else if (msg.type === 'state' && msg.lobby) {
        this.shardHops = 0; // seated: the hops led somewhere
      } else if (msg.type === 'error' && msg.code === 'busy' && !this.welcomed
        && Number.isFinite(msg.retry_after_ms)) {
        this.busyRetryMs = msg.retry_after_ms;
      }
      this.handlers.onMessage(msg);
    });
    ws.addEventListener('close', (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return;
      if (ev.code === 4000) {
        this.stopped = true;
        this.handlers.onStatus('replaced');
        return;
      }
      if (ev.code === 1012) {
        const [low, high] = RESTART_RETRY_MS;
        const delay = low + Math.random() * (high - low);
        this.handlers.onStatus('reconnecting', delay);
        this.timer = setTimeout(() => this.open(), delay);
        return;
      }
      if (ev.code === 1013) {
        // The server's own figure is already spread at random; the fixed schedule is
        // for a server that named none.
        const delay = this.busyRetryMs ?? FULL_RETRY_MS[Math.min(this.fullAttempt, FULL_RETRY_MS.length - 1)];
        this.fullAttempt += 1;
        this.handlers.onStatus('full', delay);
        this.timer = setTimeout(() => this.open(), delay);
        return;
      }
      this.scheduleReconnect();
    });
  }

  /** The full `state` a `delta` makes of the one held, or null after a gap (then a
   * `resync` is sent, once, until a full `state` comes). */
  patched(ws, delta) {
    if (!this.held || this.held.seq !== delta.base) {
      if (!this.resyncing && ws.readyState === WebSocket.OPEN) {
        this.resyncing = true;
        ws.send(JSON.stringify({ type: 'resync' }));
      }
      return null;
    }
    const next = mergePatch(this.held, delta.patch);
    next.seq = delta.seq;
    next.events = delta.events;
    this.held = next;
    return next;
  }

  scheduleReconnect() {
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.attempt);
    // "Equal jitter": half fixed, half random, so a restarted server is not hit by
    // every client in the same instant.
    const delay = ceiling / 2 + Math.random() * (ceiling / 2);
    this.attempt += 1;
    this.handlers.onStatus('reconnecting', delay);
    this.timer = setTimeout(() => this.open(), delay);
  }

  /** Sends a message; false when not connected (the caller may tell the user). */
  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || !this.welcomed) return false;
    if (msg.type === 'join_lobby') this.lastJoin = msg;
    if (msg.type === 'quick_play') this.lastQuickName = msg.name;
    this.ws.send(JSON.stringify(msg));
    return true;
  }
}

/** RFC 7386 JSON Merge Patch: a new value; the objects it changes are new objects
 * (members keep their place, new ones go last), the rest is shared with `target`. */
export function mergePatch(target, patch) {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
