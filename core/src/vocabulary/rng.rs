//! The server's randomness: one seed, forked per purpose into portable ChaCha12
//! generators, and the secret tokens drawn from them.
//!
//! Production seeds from OS entropy in the shell and never logs the seed (it would make
//! session tokens predictable); the simulator and tests pass a fixed one.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

/// The root seed of a server.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Seed(pub [u8; 32]);

impl Seed {
    /// A seed from a number (tests and the simulator).
    pub fn from_u64(n: u64) -> Seed {
        let mut bytes = [0u8; 32];
        ChaCha12Rng::seed_from_u64(n).fill_bytes(&mut bytes);
        Seed(bytes)
    }
}

impl std::fmt::Debug for Seed {
    /// Never prints the bytes: a logged seed would reveal every session token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seed(..)")
    }
}

/// What a forked generator is for; each purpose gets an independent stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Purpose {
    Tokens = 1,
    PlayerIds = 2,
    LobbyCodes = 3,
    GameSeeds = 4,
    // 5 was the fallback player's; it now draws from each game's seed and move number.
    Breaker = 6,
    /// The spread of `busy`'s `retry_after_ms`.
    Retry = 7,
    /// Profile keys (secret).
    ProfileKeys = 8,
    /// Public profile ids.
    ProfileIds = 9,
    /// Game ids (public, not guessable).
    GameIds = 10,
}

/// An independent generator for `purpose`, derived from the root seed.
pub fn fork(seed: &Seed, purpose: Purpose) -> ChaCha12Rng {
    let mut rng = ChaCha12Rng::from_seed(seed.0);
    rng.set_stream(purpose as u64);
    rng
}

/// Bytes of a session token: 8 bytes that locate the session (compared in variable
/// time) and 16 secret bytes (128 bits, compared in constant time).
pub const TOKEN_BYTES: usize = 24;

/// Characters of an encoded token ([`encode_token`]).
pub const TOKEN_CHARS: usize = 32;

/// A session token's raw bytes.
pub type TokenBytes = [u8; TOKEN_BYTES];

/// Draws a new token.
pub fn new_token(rng: &mut ChaCha12Rng) -> TokenBytes {
    let mut bytes = [0u8; TOKEN_BYTES];
    rng.fill_bytes(&mut bytes);
    bytes
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// URL-safe base64 without padding (24 bytes -> 32 characters).
pub fn encode_token(bytes: &TokenBytes) -> String {
    encode_b64url(bytes)
}

/// URL-safe base64 without padding of any bytes.
pub fn encode_b64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4 + 1);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(BASE64URL[index as usize]));
        }
    }
    out
}

/// The bytes of a token string, or `None` when it is not one of ours.
pub fn decode_token(text: &str) -> Option<TokenBytes> {
    decode_b64url(text)
}

/// The `N` bytes of a URL-safe base64 text of `N` bytes, `N` a multiple of 3 (so every
/// group of 4 characters is whole), or `None` when it is not such a text.
pub fn decode_b64url<const N: usize>(text: &str) -> Option<[u8; N]> {
    if !N.is_multiple_of(3) || text.len() != N / 3 * 4 {
        return None;
    }
    let mut bytes = [0u8; N];
    for (chunk, out) in text.as_bytes().chunks(4).zip(bytes.chunks_mut(3)) {
        let mut n = 0u32;
        for &c in chunk {
            let v = BASE64URL.iter().position(|&x| x == c)?;
            n = (n << 6) | u32::try_from(v).ok()?;
        }
        for (i, o) in out.iter_mut().enumerate() {
            *o = (n >> (16 - 8 * i)) as u8;
        }
    }
    Some(bytes)
}

/// Compares two secrets in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the optimiser from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// `n` random lowercase hex characters.
pub fn hex_id(rng: &mut ChaCha12Rng, n: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    (0..n)
        .map(|_| char::from(HEX[(rng.next_u32() & 0xf) as usize]))
        .collect()
}
