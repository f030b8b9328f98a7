// Turn alerts: while it is your turn and the tab is in the background, the tab's title
// says so; when it becomes your turn in a background tab, an optional short chime plays.
// The chime is made with Web Audio (no audio file to fetch). Sound stays off until the
// player turns it on with the toggle; the choice is kept in localStorage.

const SOUND_KEY = 'wizard.sound';
export const BASE_TITLE = 'Wizard';
export const TURN_TITLE = '● Your turn – Wizard';

let myTurn = false;
let soundOn = false;
let audio = null; // the AudioContext, made on the first gesture that needs it
let toggle = null;

function updateTitle() {
  const want = myTurn && document.hidden ? TURN_TITLE : BASE_TITLE;
  if (document.title !== want) document.title = want;
}

/** The AudioContext, created or resumed; browsers allow it after a user gesture. */
function context() {
  try {
    audio ??= new (window.AudioContext || window.webkitAudioContext)();
    if (audio.state === 'suspended') audio.resume().catch(() => {});
  } catch {
    audio = null;
  }
  return audio;
}

/** Two short rising notes, about a third of a second in all. */
function chime() {
  const ctx = context();
  if (!ctx) return;
  const t0 = ctx.currentTime + 0.02;
  for (const [freq, at] of [[660, 0], [880, 0.14]]) {
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.type = 'sine';
    osc.frequency.value = freq;
    gain.gain.setValueAtTime(0.0001, t0 + at);
    gain.gain.exponentialRampToValueAtTime(0.18, t0 + at + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + at + 0.22);
    osc.connect(gain).connect(ctx.destination);
    osc.start(t0 + at);
    osc.stop(t0 + at + 0.25);
  }
}

function renderToggle() {
  if (!toggle) return;
  toggle.setAttribute('aria-pressed', String(soundOn));
  toggle.querySelector('#sound-text').textContent = soundOn ? 'Sound on' : 'Sound off';
}

/** Wires the sound toggle and the title; call once. */
export function initAlerts(toggleEl) {
  toggle = toggleEl;
  try {
    soundOn = localStorage.getItem(SOUND_KEY) === 'on';
  } catch {
    soundOn = false;
  }
  renderToggle();
  toggle.addEventListener('click', () => {
    soundOn = !soundOn;
    try {
      localStorage.setItem(SOUND_KEY, soundOn ? 'on' : 'off');
    } catch {
      /* not remembered, still switched */
    }
    renderToggle();
    if (soundOn) chime(); // a sample, and the gesture that lets the page make sound
  });
  // After a reload the page may only start audio after a gesture: take the first one.
  const unlock = () => {
    if (soundOn) context();
    window.removeEventListener('pointerdown', unlock, true);
    window.removeEventListener('keydown', unlock, true);
  };
  window.addEventListener('pointerdown', unlock, true);
  window.addEventListener('keydown', unlock, true);
  document.addEventListener('visibilitychange', updateTitle);
  updateTitle();
}

/** Tells the alerts whether the player may act now (after every render). */
export function setMyTurn(mine) {
  const began = mine && !myTurn;
  myTurn = mine;
  if (began && document.hidden && soundOn) chime();
  updateTitle();
}
