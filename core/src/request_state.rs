//! Signed, single-use `requestState` tokens for multi round-trip requests
//! (2026-07-28).
//!
//! When the hub answers a modern client with an `InputRequiredResult`, the
//! `requestState` it returns is an attacker-controlled value on the retry
//! (row mrtr-requeststate-attacker-controlled). This module mints and checks
//! it: HMAC-SHA256 over a compact binary payload that binds the state to
//! the principal, a short expiry, the originating method and a digest of its
//! salient parameters (row mrtr-requeststate-replay-fields), and carries the
//! hub's opaque inner state (e.g. the upstream's own `requestState`).
//! Every opened token is recorded in a bounded [`ReplaySet`], so each token
//! is accepted once only (row mrtr-single-use-enforced); each principal has
//! a share of it, so one client cannot fill it for the others.
//!
//! Token: base64url without padding of
//!
//! | bytes | field |
//! |---|---|
//! | 1 | version, [`VERSION`] |
//! | 1 | key id |
//! | 8 | expiry, ms, big-endian |
//! | 16 | nonce |
//! | 32 | SHA-256 of the principal |
//! | 32 | SHA-256 of the salient params |
//! | 1 | method length *m* |
//! | *m* | method |
//! | 2 | inner state length *n*, big-endian |
//! | *n* | inner state |
//! | 32 | HMAC-SHA256 of a context label and all bytes above |
//!
//! No clock or RNG here: the caller passes `now_ms` and a fresh random nonce.
//! Keys are 256-bit secrets with a one-byte id; [`Keys`] holds the current
//! key, used to seal, and optionally the previous one, still accepted.

use core::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Layout version written in the first byte of every token.
pub const VERSION: u8 = 1;
/// Length of the nonce the caller supplies for each token.
pub const NONCE_LEN: usize = 16;
/// Longest method name a token can carry.
pub const MAX_METHOD_LEN: usize = u8::MAX as usize;
/// Longest inner state a token can carry.
pub const MAX_INNER_LEN: usize = u16::MAX as usize;

/// Domain separation: a key shared with another use by mistake still
/// cannot produce a valid `requestState`.
const MAC_CONTEXT: &[u8] = b"mcpx/requestState\0";
const DIGEST_LEN: usize = 32;
const TAG_LEN: usize = 32;
/// Version, key id, expiry, nonce, two digests, method length.
const FIXED_LEN: usize = 1 + 1 + 8 + NONCE_LEN + DIGEST_LEN + DIGEST_LEN + 1;
/// Everything before the inner state, at its largest.
const MAX_HEAD_LEN: usize = FIXED_LEN + MAX_METHOD_LEN + 2;

/// A 256-bit HMAC key and the id that names it in tokens.
/// Deliberately not `PartialEq` (no non-constant-time secret comparison)
/// and its `Debug` shows only the id.
#[derive(Clone)]
pub struct Key {
    id: u8,
    secret: [u8; 32],
}

impl Key {
    /// A key from its id and secret (32 random bytes from the caller).
    pub const fn new(id: u8, secret: [u8; 32]) -> Self {
        Key { id, secret }
    }

    /// The key id written into tokens sealed with this key.
    pub fn id(&self) -> u8 {
        self.id
    }

    /// An HMAC instance keyed with this key, context label absorbed.
    fn mac(&self) -> HmacSha256 {
        // A 32-byte key zero-padded to the 64-byte block is, by HMAC's
        // definition, the same key; this avoids a fallible constructor.
        let mut block = hmac::digest::Key::<HmacSha256>::default();
        for (d, s) in block.iter_mut().zip(self.secret) {
            *d = s;
        }
        let mut mac = <HmacSha256 as Mac>::new(&block);
        mac.update(MAC_CONTEXT);
        mac
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Two keys given the same id: tokens could not say which one signed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicateKeyId(pub u8);

impl fmt::Display for DuplicateKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "current and previous requestState keys share id {}", self.0)
    }
}

/// What a token is bound to: checked on every retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The authenticated principal (any stable bytes naming the caller).
    pub principal: &'a [u8],
    /// The originating request's method, e.g. `tools/call`.
    pub method: &'a str,
    /// The salient parameters of the originating request, in a canonical
    /// form chosen by the caller (e.g. tool name and arguments); only their
    /// SHA-256 digest is stored.
    pub params: &'a [u8],
}

/// Why a token could not be sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealError {
    /// The method is longer than [`MAX_METHOD_LEN`].
    MethodTooLong,
    /// The inner state is longer than [`MAX_INNER_LEN`].
    InnerTooLong,
    /// The output buffer is too small; `needed` bytes would suffice.
    Overflow {
        /// Bytes the token needs.
        needed: usize,
    },
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::MethodTooLong => write!(f, "method longer than {MAX_METHOD_LEN} bytes"),
            SealError::InnerTooLong => write!(f, "inner state longer than {MAX_INNER_LEN} bytes"),
            SealError::Overflow { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
        }
    }
}

/// Why a presented token was rejected. The variants after
/// [`OpenError::BadSignature`] are reported only for authentic tokens, so
/// they tell a forger nothing; none of them reveals key material.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// Not a token: bad base64url, wrong length or inconsistent layout.
    Malformed,
    /// A layout version this build does not read.
    UnsupportedVersion,
    /// Signed with a key that is neither the current nor the previous one
    /// (e.g. rotated out).
    UnknownKey,
    /// The HMAC does not verify: the token was altered or forged.
    BadSignature,
    /// The token's expiry has passed.
    Expired,
    /// Minted for a different principal.
    PrincipalMismatch,
    /// Minted for a different method.
    MethodMismatch,
    /// Minted for a request with different salient parameters.
    ParamsMismatch,
    /// Already used once.
    Replayed,
    /// The replay set is full of unexpired tokens; the token was not used
    /// and may be presented again later.
    ReplaySetFull,
    /// The principal's share of the replay set is full of its own unexpired
    /// tokens; the token was not used and may be presented again later.
    ReplayShareFull {
        /// Entries one principal may hold.
        share: usize,
        /// When the first of its entries expires (ms): the earliest time a
        /// retry can succeed.
        frees_at_ms: u64,
    },
    /// The scratch buffer is too small; `needed` bytes would suffice.
    Overflow {
        /// Bytes the decoded token needs.
        needed: usize,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpenError::Malformed => "requestState is malformed",
            OpenError::UnsupportedVersion => "requestState has an unsupported version",
            OpenError::UnknownKey => "requestState was signed with an unknown or retired key",
            OpenError::BadSignature => "requestState failed integrity verification",
            OpenError::Expired => "requestState has expired; start the request again",
            OpenError::PrincipalMismatch => "requestState belongs to a different principal",
            OpenError::MethodMismatch => "requestState belongs to a different method",
            OpenError::ParamsMismatch => "requestState belongs to a request with different parameters",
            OpenError::Replayed => "requestState has already been used",
            OpenError::ReplaySetFull => "too many requestStates in flight; retry later",
            OpenError::ReplayShareFull { share, .. } => {
                return write!(
                    f,
                    "this principal redeemed {share} requestStates that have not expired yet (its share \
                     of the single-use set); retry after they expire"
                )
            }
            OpenError::Overflow { needed } => {
                return write!(f, "requestState scratch buffer too small: {needed} bytes needed")
            }
        })
    }
}

/// A verified and consumed token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened<'s> {
    /// The inner state sealed into the token.
    pub inner: &'s [u8],
    /// Id of the key that signed it (the previous key's id means it is
    /// still valid but predates the last rotation).
    pub key_id: u8,
    /// Expiry, ms.
    pub expires_at_ms: u64,
    /// The token's nonce.
    pub nonce: [u8; NONCE_LEN],
}

/// Length of the token [`Keys::seal`] produces for a method of
/// `method_len` bytes and an inner state of `inner_len` bytes. A scratch
/// buffer of this size always suffices for [`Keys::open`] of such a token.
pub const fn sealed_len(method_len: usize, inner_len: usize) -> usize {
    base64_len(FIXED_LEN + method_len + 2 + inner_len + TAG_LEN)
}

/// Length of unpadded base64 for `n` bytes.
const fn base64_len(n: usize) -> usize {
    n / 3 * 4 + [0, 2, 3][n % 3]
}

/// Decoded length of `n` characters of unpadded base64, if `n` is valid.
fn decoded_len(n: usize) -> Option<usize> {
    let extra = [Some(0), None, Some(1), Some(2)][n % 4]?;
    Some(n / 4 * 3 + extra)
}

/// The current signing key and, during a rotation, the previous one.
#[derive(Debug, Clone)]
pub struct Keys {
    current: Key,
    previous: Option<Key>,
}

impl Keys {
    /// Keys for sealing with `current` and opening with either key.
    pub fn new(current: Key, previous: Option<Key>) -> Result<Self, DuplicateKeyId> {
        match &previous {
            Some(p) if p.id == current.id => Err(DuplicateKeyId(p.id)),
            _ => Ok(Keys { current, previous }),
        }
    }

    /// Makes `next` the signing key and the current key the previous one;
    /// tokens of the key before that stop verifying.
    pub fn rotate(&mut self, next: Key) -> Result<(), DuplicateKeyId> {
        if next.id == self.current.id {
            return Err(DuplicateKeyId(next.id));
        }
        self.previous = Some(core::mem::replace(&mut self.current, next));
        Ok(())
    }

    fn by_id(&self, id: u8) -> Option<&Key> {
        core::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find(|k| k.id == id)
    }

    /// Seals `inner` into a token bound to `binding`, valid until
    /// `now_ms + ttl_ms`, signed with the current key, written into `out`
    /// ([`sealed_len`] bytes). `nonce` must be fresh random bytes.
    pub fn seal<'o>(
        &self,
        binding: &Binding<'_>,
        inner: &[u8],
        nonce: &[u8; NONCE_LEN],
        now_ms: u64,
        ttl_ms: u64,
        out: &'o mut [u8],
    ) -> Result<&'o str, SealError> {
        let method = binding.method.as_bytes();
        let method_len = u8::try_from(method.len()).map_err(|_| SealError::MethodTooLong)?;
        let inner_len = u16::try_from(inner.len()).map_err(|_| SealError::InnerTooLong)?;
        let needed = sealed_len(method.len(), inner.len());
        let out = out.get_mut(..needed).ok_or(SealError::Overflow { needed })?;

        let mut head = [0u8; MAX_HEAD_LEN];
        let mut w = Writer { buf: &mut head, len: 0 };
        w.put(&[VERSION, self.current.id]);
        w.put(&now_ms.saturating_add(ttl_ms).to_be_bytes());
        w.put(nonce);
        w.put(&Sha256::digest(binding.principal));
        w.put(&Sha256::digest(binding.params));
        w.put(&[method_len]);
        w.put(method);
        w.put(&inner_len.to_be_bytes());
        let head = w.written();

        let mut mac = self.current.mac();
        mac.update(head);
        mac.update(inner);
        let tag = mac.finalize().into_bytes();

        let mut enc = Base64Writer { out, len: 0, carry: [0; 3], carried: 0 };
        for part in [head, inner, tag.as_slice()] {
            enc.feed(part);
        }
        Ok(enc.finish())
    }

    /// Verifies `token` against `binding` at `now_ms`, records it in
    /// `replay` and returns its contents, decoded into `scratch`.
    ///
    /// Checks, in order: base64url and length ([`OpenError::Malformed`]),
    /// version, key id, HMAC (constant-time), layout, expiry, principal,
    /// method, params digest, then single use. A token that fails any check
    /// is not recorded.
    pub fn open<'s, const N: usize>(
        &self,
        token: &str,
        binding: &Binding<'_>,
        now_ms: u64,
        replay: &mut ReplaySet<N>,
        scratch: &'s mut [u8],
    ) -> Result<Opened<'s>, OpenError> {
        let opened = self.verify(token, binding, now_ms, scratch)?;
        replay.claim(&opened, binding.principal, now_ms)?;
        Ok(opened)
    }

    /// [`Keys::open`] without the single-use check: every other check, in
    /// the same order. The caller claims the nonce itself, once, where the
    /// single-use set is kept (e.g. a store shared by several servers, or
    /// [`ReplaySet::claim`]); a verified token is not used until then.
    pub fn verify<'s>(
        &self,
        token: &str,
        binding: &Binding<'_>,
        now_ms: u64,
        scratch: &'s mut [u8],
    ) -> Result<Opened<'s>, OpenError> {
        let needed = decoded_len(token.len()).ok_or(OpenError::Malformed)?;
        if needed > sealed_len(MAX_METHOD_LEN, MAX_INNER_LEN) {
            return Err(OpenError::Malformed);
        }
        let buf = scratch.get_mut(..needed).ok_or(OpenError::Overflow { needed })?;
        let n = URL_SAFE_NO_PAD.decode_slice(token, buf).map_err(|_| OpenError::Malformed)?;
        let raw: &'s [u8] = buf.get(..n).unwrap_or_default();

        let body_len = raw.len().checked_sub(TAG_LEN).ok_or(OpenError::Malformed)?;
        let (body, tag) = raw.split_at(body_len);
        let mut r = Reader(body);
        let [version, key_id] = r.array().ok_or(OpenError::Malformed)?;
        if version != VERSION {
            return Err(OpenError::UnsupportedVersion);
        }
        let key = self.by_id(key_id).ok_or(OpenError::UnknownKey)?;
        let mut mac = key.mac();
        mac.update(body);
        mac.verify_slice(tag).map_err(|_| OpenError::BadSignature)?;

        let fields = (|| {
            let expires_at_ms = u64::from_be_bytes(r.array()?);
            let nonce: [u8; NONCE_LEN] = r.array()?;
            let principal: [u8; DIGEST_LEN] = r.array()?;
            let params: [u8; DIGEST_LEN] = r.array()?;
            let [method_len] = r.array()?;
            let method = r.take(method_len.into())?;
            let inner_len = u16::from_be_bytes(r.array()?);
            let inner = r.take(inner_len.into())?;
            r.0.is_empty().then_some((expires_at_ms, nonce, principal, params, method, inner))
        })();
        let (expires_at_ms, nonce, principal, params, method, inner) =
            fields.ok_or(OpenError::Malformed)?;

        if now_ms >= expires_at_ms {
            return Err(OpenError::Expired);
        }
        if Sha256::digest(binding.principal).as_slice() != principal {
            return Err(OpenError::PrincipalMismatch);
        }
        if binding.method.as_bytes() != method {
            return Err(OpenError::MethodMismatch);
        }
        if Sha256::digest(binding.params).as_slice() != params {
            return Err(OpenError::ParamsMismatch);
        }
        Ok(Opened { inner, key_id, expires_at_ms, nonce })
    }
}

/// Keys and nonces derived from one secret seed, for a caller that holds no
/// RNG of its own (a sans-IO state machine): the runtime draws the 32-byte
/// seed once from the operating system's CSPRNG; the signing key and every
/// nonce are SHA-256 of a label, the seed and a counter, so they are as
/// unpredictable as the seed and nonces never repeat within one seed.
#[derive(Clone)]
pub struct Seeded {
    seed: [u8; 32],
    counter: u64,
}

impl Seeded {
    /// Derivations from `seed` (32 random bytes).
    pub const fn new(seed: [u8; 32]) -> Self {
        Seeded { seed, counter: 0 }
    }

    fn derive(&self, label: &[u8], n: u64) -> [u8; DIGEST_LEN] {
        let mut h = Sha256::new();
        h.update(b"mcpx/seeded\0");
        h.update(label);
        h.update(self.seed);
        h.update(n.to_be_bytes());
        h.finalize().into()
    }

    /// The signing key with id `id` (the same for the same seed and id).
    pub fn key(&self, id: u8) -> Key {
        Key::new(id, self.derive(b"key", id.into()))
    }

    /// A fresh nonce.
    pub fn nonce(&mut self) -> [u8; NONCE_LEN] {
        self.counter += 1;
        let d = self.derive(b"nonce", self.counter);
        let mut n = [0u8; NONCE_LEN];
        n.copy_from_slice(&d[..NONCE_LEN]);
        n
    }
}

impl fmt::Debug for Seeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seeded").field("counter", &self.counter).finish_non_exhaustive()
    }
}

/// SHA-256 of `bytes`: a principal from a secret it must not keep (e.g. a
/// bearer token), or a digest for [`Binding::params`].
pub fn digest(bytes: &[u8]) -> [u8; DIGEST_LEN] {
    Sha256::digest(bytes).into()
}

/// The nonces of tokens already opened, each kept until its token expires.
///
/// Fixed capacity `N`, of which one principal holds at most `share`
/// entries: when a token is opened, expired entries are evicted first; if
/// its principal already holds `share` unexpired entries the token is
/// refused with [`OpenError::ReplayShareFull`], if all `N` are unexpired
/// with [`OpenError::ReplaySetFull`] (fail closed either way) and it stays
/// unused. One principal thus never locks out the others: filling the set
/// takes `N / share` principals each at its share within one TTL. Size `N`
/// for the number of retries expected within one TTL. `now_ms` is assumed
/// not to go backwards.
#[derive(Debug, Clone)]
pub struct ReplaySet<const N: usize> {
    /// (nonce, expiry, the first bytes of the principal's digest).
    entries: heapless::Vec<([u8; NONCE_LEN], u64, [u8; PRINCIPAL_TAG_LEN]), N>,
    share: usize,
}

/// Bytes of a principal's digest that tell its entries apart (a collision
/// only merges two principals' shares).
const PRINCIPAL_TAG_LEN: usize = 8;

impl<const N: usize> Default for ReplaySet<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReplaySet<N> {
    /// An empty set in which one principal may hold every entry.
    pub const fn new() -> Self {
        Self::with_share(N)
    }

    /// An empty set in which one principal holds at most `share` entries
    /// (clamped to 1..=N).
    pub const fn with_share(share: usize) -> Self {
        let share = if share == 0 { 1 } else if share > N { N } else { share };
        ReplaySet { entries: heapless::Vec::new(), share }
    }

    /// Number of recorded (possibly expired, not yet evicted) tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records the nonce of `opened` (a token [`Keys::verify`] accepted for
    /// `principal`) until the token expires, or refuses it: already used
    /// ([`OpenError::Replayed`]), or no room ([`OpenError::ReplaySetFull`],
    /// [`OpenError::ReplayShareFull`]; the token stays unused).
    pub fn claim(&mut self, opened: &Opened<'_>, principal: &[u8], now_ms: u64) -> Result<(), OpenError> {
        let principal: [u8; DIGEST_LEN] = Sha256::digest(principal).into();
        self.redeem(&opened.nonce, &principal, opened.expires_at_ms, now_ms)
    }

    fn redeem(
        &mut self,
        nonce: &[u8; NONCE_LEN],
        principal: &[u8; DIGEST_LEN],
        expires_at_ms: u64,
        now_ms: u64,
    ) -> Result<(), OpenError> {
        if self.entries.iter().any(|(n, _, _)| n == nonce) {
            return Err(OpenError::Replayed);
        }
        self.entries.retain(|&(_, expiry, _)| expiry > now_ms);
        let mut tag = [0u8; PRINCIPAL_TAG_LEN];
        tag.copy_from_slice(&principal[..PRINCIPAL_TAG_LEN]);
        // A share of all N is the global cap itself, reported as such.
        if self.share < N {
            let own = self.entries.iter().filter(|(_, _, t)| *t == tag);
            let (held, first) = own.fold((0, u64::MAX), |(n, first), &(_, expiry, _)| (n + 1, first.min(expiry)));
            if held >= self.share {
                return Err(OpenError::ReplayShareFull { share: self.share, frees_at_ms: first });
            }
        }
        self.entries.push((*nonce, expires_at_ms, tag)).map_err(|_| OpenError::ReplaySetFull)
    }
}

/// Appends into a buffer sized for the largest head.
struct Writer<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> Writer<'b> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
        }
    }

    fn written(self) -> &'b [u8] {
        let Writer { buf, len } = self;
        buf.get(..len).unwrap_or_default()
    }
}

/// Reads fields off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let field = self.0.get(..n)?;
        self.0 = self.0.get(n..)?;
        Some(field)
    }

    fn array<const K: usize>(&mut self) -> Option<[u8; K]> {
        self.take(K)?.try_into().ok()
    }
}

/// Unpadded base64url of several parts as if they were one, into a buffer
/// already checked to be large enough.
struct Base64Writer<'o> {
    out: &'o mut [u8],
    len: usize,
    carry: [u8; 3],
    carried: usize,
}

impl<'o> Base64Writer<'o> {
    fn feed(&mut self, mut data: &[u8]) {
        if self.carried > 0 {
            while self.carried < 3 {
                let Some((&b, rest)) = data.split_first() else { return };
                self.carry[self.carried] = b;
                self.carried += 1;
                data = rest;
            }
            let group = self.carry;
            self.emit(&group);
            self.carried = 0;
        }
        let (whole, tail) = data.split_at(data.len() / 3 * 3);
        self.emit(whole);
        for (c, &b) in self.carry.iter_mut().zip(tail) {
            *c = b;
        }
        self.carried = tail.len();
    }

    fn emit(&mut self, chunk: &[u8]) {
        if let Some(dst) = self.out.get_mut(self.len..) {
            self.len += URL_SAFE_NO_PAD.encode_slice(chunk, dst).unwrap_or(0);
        }
    }

    fn finish(mut self) -> &'o str {
        let carry = self.carry;
        self.emit(carry.get(..self.carried).unwrap_or_default());
        let Base64Writer { out, len, .. } = self;
        // Only base64url characters were written.
        core::str::from_utf8(out.get(..len).unwrap_or_default()).unwrap_or_default()
    }
}
