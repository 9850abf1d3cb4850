//! The sending side of the internal hop: a client's request that another
//! replica owns is POSTed, signed (`hop_auth`), to that replica's
//! `/.mcpx/hop`. A continuation (`hub::Output::Forward`, [`Hop::forward`])
//! has its answer, JSON or an SSE stream, passed on message by message; a
//! request in a legacy session another replica owns ([`Hop::relay`],
//! `http::session_dir`) gets the owner's HTTP answer itself, to be copied
//! to the client as it comes.
//!
//! Never a hang: the connection is bounded by [`CONNECT_TIMEOUT`] (a dead
//! replica fails fast), the answer's head and every silence on its stream
//! by [`ANSWER_TIMEOUT`].

use std::cell::RefCell;
use std::time::Duration;

use mcpx_core::frame::sse::{SseDecoder, SseItem};
use nanorand::{ChaCha20, Rng as _};

use super::hop_auth::{self, Field, HopKey, Route, Signed, NONCE_LEN};
use crate::remote::http::{Client, Error, Limits, Response};
use crate::remote::url::Url;

/// How long opening a connection to a peer replica may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the owner may stay silent (it streams SSE with keep-alives
/// while a call runs).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest answer message passed on: what a stdio server may answer.
const MAX_MESSAGE: usize = crate::limits::MAX_LINE;
/// Idle connections kept per peer.
const MAX_IDLE: usize = 8;

struct Peer {
    id: String,
    url: Url,
    client: Client,
}

/// The hop to the other replicas of this one.
pub struct Hop {
    me: String,
    key: HopKey,
    peers: Vec<Peer>,
    /// The hops' nonces.
    rng: RefCell<ChaCha20>,
}

impl Hop {
    /// `peers`: id and base URL (`http://host:port`) of each other replica.
    pub fn new(me: &str, state_key: &[u8; 32], peers: &[(String, String)]) -> Result<Hop, String> {
        let mut out = Vec::new();
        for (id, base) in peers {
            let mut url = Url::parse(base).map_err(|e| format!("cluster.peers.{id}: {e}"))?;
            url.target = hop_auth::PATH.to_string();
            let connector = crate::remote::connector(None, &url, CONNECT_TIMEOUT).map_err(|e| format!("cluster.peers.{id}: {e}"))?;
            out.push(Peer { id: id.clone(), url, client: Client::new(connector, MAX_IDLE) });
        }
        Ok(Hop { me: me.to_string(), key: HopKey::derive(state_key), peers: out, rng: RefCell::new(ChaCha20::new()) })
    }

    /// Sends `msg` (with its MCP `headers`) to replica `to` on behalf of
    /// `principal`; each message of the answer goes to `deliver` (true when
    /// it was the response). `Ok` once the response was delivered;
    /// `Err(why)` when none came.
    pub async fn forward(
        &self,
        to: &str,
        msg: &[u8],
        principal: &[u8],
        headers: &[(String, Vec<u8>)],
        deliver: &dyn Fn(Vec<u8>) -> bool,
    ) -> Result<(), String> {
        let mut fields: Vec<(&str, &[u8])> = vec![
            ("content-type", b"application/json"),
            ("accept", b"application/json, text/event-stream"),
        ];
        fields.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
        let failed = |e: &dyn std::fmt::Display| format!("replica {to:?} did not answer the forwarded request: {e}");
        let (peer, mut resp) = self.send(to, &Route::CONTINUATION, principal, &fields, msg).await.map_err(|e| failed(&e))?;
        let answered = match (resp.status, resp.content_type.as_str()) {
            (_, "text/event-stream") => relay_sse(&mut resp.body, deliver).await.map_err(|e| failed(&e))?,
            (_, "application/json") => {
                let body = resp.body.read_all(MAX_MESSAGE).await.map_err(|e| failed(&e))?;
                // A JSON-RPC error the owner answered with (a 4xx with a
                // body) is the client's answer too.
                deliver(body)
            }
            (status, _) => {
                let body = resp.body.read_all(4096).await.unwrap_or_default();
                return Err(failed(&format!("HTTP {status}: {}", String::from_utf8_lossy(&body).trim())));
            }
        };
        peer.client.recycle(resp.body);
        if answered {
            Ok(())
        } else {
            Err(failed(&"its answer ended without a response"))
        }
    }

    /// Sends a client's request in a legacy session that replica `to` owns
    /// (`route`: its method, target and session id; `headers`: its MCP
    /// headers) on behalf of `principal`; the owner's answer head, its body
    /// to be read as it comes (then given back with [`Hop::recycle`]).
    #[cfg(feature = "cluster")]
    pub async fn relay(
        &self,
        to: &str,
        route: &Route<'_>,
        principal: &[u8],
        headers: &[(&str, &[u8])],
        body: &[u8],
    ) -> Result<Response, RelayError> {
        let (_, resp) = self.send(to, route, principal, headers, body).await?;
        Ok(resp)
    }

    /// Keeps the connection of a relayed answer read to its end for the
    /// next hop to replica `to`.
    #[cfg(feature = "cluster")]
    pub fn recycle(&self, to: &str, body: crate::remote::http::Body) {
        if let Some(peer) = self.peers.iter().find(|p| p.id == to) {
            peer.client.recycle(body);
        }
    }

    /// Is `id` one of the other replicas (`cluster.peers`)?
    #[cfg(feature = "cluster")]
    pub fn knows(&self, id: &str) -> bool {
        self.peers.iter().any(|p| p.id == id)
    }

    /// The other replicas' ids.
    #[cfg(all(feature = "cluster", feature = "consent"))]
    pub fn peers(&self) -> impl Iterator<Item = &str> {
        self.peers.iter().map(|p| p.id.as_str())
    }

    /// This replica's id.
    #[cfg(feature = "cluster")]
    pub fn me(&self) -> &str {
        &self.me
    }

    /// POSTs `body` to `to`'s hop with `headers` (the relayed ones: all
    /// under the MAC), signed for `route` and `principal` with a fresh
    /// nonce; the peer and the answer head.
    async fn send(&self, to: &str, route: &Route<'_>, principal: &[u8], headers: &[(&str, &[u8])], body: &[u8]) -> Result<(&Peer, Response), RelayError> {
        let peer = self.peers.iter().find(|p| p.id == to).ok_or_else(|| RelayError::NotAPeer(to.to_string()))?;
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.borrow_mut().fill_bytes(&mut nonce);
        let relayed: Vec<Field<'_>> = headers.iter().map(|(n, v)| (n.as_bytes(), *v)).collect();
        let what = Signed { from: &self.me, time_ms: hop_auth::unix_ms(), nonce: &nonce, principal, route: *route, fields: &relayed, body };
        let signed = self.key.sign(&what);
        let mut fields: Vec<(&str, &[u8])> = headers.to_vec();
        fields.extend(signed.iter().map(|(n, v)| (*n, v.as_slice())));
        let limits = Limits { max_head: 16 * 1024, head_timeout: ANSWER_TIMEOUT, idle_timeout: Some(ANSWER_TIMEOUT) };
        match peer.client.request("POST", &peer.url, &fields, body, limits, None).await {
            Ok(resp) => Ok((peer, resp)),
            Err(Error::Connect(e)) => Err(RelayError::Unreachable(e.to_string())),
            Err(Error::Io(e)) => Err(RelayError::Failed(e.to_string())),
        }
    }
}

/// Why a hop got no answer head.
#[derive(Debug, PartialEq, Eq)]
pub enum RelayError {
    /// The replica is not among `cluster.peers`.
    NotAPeer(String),
    /// No connection within [`CONNECT_TIMEOUT`]: the replica is gone.
    Unreachable(String),
    /// Connected, but the exchange failed (or timed out).
    Failed(String),
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayError::NotAPeer(id) => write!(f, "replica {id:?} is not among cluster.peers"),
            RelayError::Unreachable(e) => write!(f, "cannot connect: {e}"),
            RelayError::Failed(e) => e.fmt(f),
        }
    }
}

/// Passes each `message` event of an SSE answer on; true when the response
/// came.
async fn relay_sse(body: &mut crate::remote::http::Body, deliver: &dyn Fn(Vec<u8>) -> bool) -> std::io::Result<bool> {
    let mut dec = SseDecoder::new(vec![0u8; MAX_MESSAGE.min(1024 * 1024)]);
    let mut any = false;
    while let Some(mut input) = body.next_chunk().await? {
        while !input.is_empty() {
            let n = dec.feed(input);
            input = &input[n..];
            while let Some(item) = dec.next() {
                match item {
                    SseItem::Event(ev) if ev.event.unwrap_or(b"message") == b"message" && !ev.data.is_empty() => {
                        any |= deliver(ev.data.to_vec());
                    }
                    SseItem::Event(_) => {}
                    SseItem::TooLarge { len, .. } => warn!("cluster hop: an answer event of {len} bytes was over the limit and dropped"),
                }
            }
        }
    }
    Ok(any)
}
