// The player's profile in this browser (PROTOCOL.md 7.1): its key kept in localStorage
// (so it survives closing the browser), a key link opened on another device (`/#key=`:
// the fragment never reaches the server; it is moved into localStorage and taken out of
// the address bar at once), and the home page's card: create, who you are, the link,
// forget (this browser only) and delete (the profile itself, after a confirmation).
// Every name and figure goes in as text, never as HTML.

const KEY_STORE = 'wizard.profile_key';
/** The fragment a key link carries: `/#key=<key>` (URL-safe base64). */
const KEY_LINK = /^#key=([A-Za-z0-9_-]{16,128})$/;

let sendMessage = () => false;
let notify = () => {};
let reconnect = () => {};
/** The profile signed in now ({id, name, rating, games}), or null. */
let current = null;
/** A key was sent with `hello` and the server knew no profile for it. */
let unknownKey = false;

const $ = (id) => document.getElementById(id);

/** The key kept in this browser, or null. */
export function profileKey() {
  try {
    return localStorage.getItem(KEY_STORE);
  } catch {
    return null;
  }
}

function keepKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORE, key);
    else localStorage.removeItem(KEY_STORE);
  } catch {
    /* private mode: the profile lasts as long as the page */
  }
}

/** Moves a key link's key into localStorage and takes it out of the address bar (and so
 *  out of the history); call before the first `hello`. */
export function adoptKeyLink() {
  const m = KEY_LINK.exec(location.hash);
  if (!m) return;
  keepKey(m[1]);
  history.replaceState(null, '', location.pathname + location.search);
}

/** The profile signed in now, or null. */
export function signedIn() {
  return current;
}

/** A lobby's seat that is ours brings news of our rating. */
export function seenRating(rating) {
  if (current && Number.isFinite(rating) && rating !== current.rating) {
    current.rating = rating;
    renderProfileCard();
  }
}

/** `welcome`, `profile` and `profile_deleted`: what the server says about our profile. */
export function onProfileMessage(msg) {
  if (msg.type === 'welcome') {
    current = msg.profile ? { ...msg.profile } : null;
    unknownKey = !msg.profile && !!profileKey();
  } else if (msg.type === 'profile') {
    keepKey(msg.key);
    current = { id: msg.id, name: msg.name, rating: msg.rating, games: msg.games };
    unknownKey = false;
    notify(`Profile ${msg.name} created. It is kept in this browser.`);
  } else if (msg.type === 'profile_deleted') {
    keepKey(null);
    current = null;
    unknownKey = false;
    notify('Your profile was deleted.');
  }
  renderProfileCard();
}

/** Fetches our profile page's figures (the home page shows the games played, which no
 *  message carries after a game). */
export function refreshProfile() {
  if (!current) return;
  const id = current.id;
  fetch(`/profiles/${encodeURIComponent(id)}`, { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : null))
    .then((p) => {
      if (!p || !current || current.id !== id) return;
      current.rating = p.rating;
      current.games = p.games;
      renderProfileCard();
    })
    .catch(() => {});
}

/** The shown rating with two decimals at most. */
export function ratingText(rating) {
  return Number.isFinite(rating) ? String(Math.round(rating * 100) / 100) : '-';
}

/** A rating change as "+1.23" or "-0.5". */
export function changeText(change) {
  const r = Math.round(change * 100) / 100;
  return `${r > 0 ? '+' : ''}${r}`;
}

export function renderProfileCard() {
  const none = $('profile-none');
  if (!none) return;
  const me = current;
  none.hidden = !!me;
  $('profile-signed').hidden = !me;
  $('profile-unknown').hidden = !unknownKey || !!me;
  if (!me) return;
  $('profile-name').textContent = me.name;
  $('profile-rating').textContent = ratingText(me.rating);
  $('profile-games').textContent = `${me.games} rated ${me.games === 1 ? 'game' : 'games'}`;
  $('profile-page-link').href = `/?profile=${encodeURIComponent(me.id)}`;
  const key = profileKey();
  $('profile-key-link').value = key ? `${location.origin}/#key=${key}` : '';
}

/** Wires the card's controls. `send(msg)` sends a message (false when not connected),
 *  `toast(text)` tells the player, `restart()` says hello again on a new connection,
 *  `nameValue()` is the name typed on the home page (or null). */
export function initProfile({ send, toast, restart, nameValue }) {
  sendMessage = send;
  notify = toast;
  reconnect = restart;
  $('create-profile').addEventListener('click', () => {
    const name = nameValue();
    if (name) sendMessage({ type: 'create_profile', name });
  });
  $('copy-key-link').addEventListener('click', () => {
    const input = $('profile-key-link');
    const done = () => notify('Profile link copied. Keep it secret: it signs in as you.');
    if (navigator.clipboard?.writeText) navigator.clipboard.writeText(input.value).then(done, () => input.select());
    else input.select();
  });
  const forget = () => {
    keepKey(null);
    current = null;
    unknownKey = false;
    renderProfileCard();
    notify('This browser forgot the profile: you play as a guest.');
    // A new hello without the key: the session goes on as a guest's.
    reconnect();
  };
  $('forget-profile').addEventListener('click', forget);
  $('forget-unknown').addEventListener('click', forget);
  $('delete-profile').addEventListener('click', () => {
    if (!current) return;
    // eslint-disable-next-line no-alert
    const sure = window.confirm(`Delete the profile ${current.name} for good? Its name and rating are removed on every device.`);
    if (sure) sendMessage({ type: 'delete_profile' });
  });
  renderProfileCard();
}
