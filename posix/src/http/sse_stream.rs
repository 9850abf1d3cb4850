//! SSE responses: the head, events and keep-alive comments, chunk-framed on
//! HTTP/1.1 (so the connection survives the stream's end) and delimited by
//! the connection's close on HTTP/1.0.

use std::time::{Duration, Instant};

use async_io::Timer;
use mcpx_core::frame::http::{
    write_chunk_header, write_response_head, BodyFraming, Header, Version, CHUNK_END, LAST_CHUNK,
};
use mcpx_core::frame::sse::{write_comment, write_event, SseEvent};
use smol::channel::Receiver;
use smol::future;

use super::conn::Conn;
use super::session::Item;

pub(crate) struct SseOut {
    chunked: bool,
    keepalive: Duration,
    pub next_ping: Instant,
}

/// What woke a stream's task.
pub(crate) enum Wake {
    /// A message (or `None`: the queue closed — session ended or exchange done).
    Item(Option<Item>),
    /// The peer closed the connection.
    PeerGone,
    /// Time for a keep-alive.
    Tick,
}

impl SseOut {
    /// Writes the `200 text/event-stream` head (rows `streamable-http-x-accel-buffering`
    /// and the `Cache-Control: no-cache` every proxy honours).
    pub async fn start(
        conn: &mut Conn,
        version: Version,
        extra: &[(&str, &str)],
    ) -> Option<SseOut> {
        let chunked = version == Version::Http11;
        let mut hs = vec![
            Header {
                name: "Content-Type",
                value: b"text/event-stream",
            },
            Header {
                name: "Cache-Control",
                value: b"no-cache",
            },
            Header {
                name: "X-Accel-Buffering",
                value: b"no",
            },
        ];
        for (n, v) in extra {
            hs.push(Header {
                name: n,
                value: v.as_bytes(),
            });
        }
        if !chunked {
            hs.push(Header {
                name: "Connection",
                value: b"close",
            });
        }
        let framing = if chunked {
            BodyFraming::Chunked
        } else {
            BodyFraming::UntilClose
        };
        let mut out = vec![0u8; 1024];
        let n = write_response_head(200, &hs, framing, &mut out).ok()?;
        conn.write(&out[..n]).await.ok()?;
        let keepalive = Duration::from_millis(conn.shared.cfg.limits.sse_keepalive_ms.max(10));
        Some(SseOut {
            chunked,
            keepalive,
            next_ping: Instant::now() + keepalive,
        })
    }

    async fn put(&mut self, conn: &mut Conn, block: &[u8]) -> bool {
        let mut out = Vec::with_capacity(block.len() + 16);
        if self.chunked {
            let mut h = [0u8; 24];
            let Ok(n) = write_chunk_header(block.len(), &mut h) else {
                return false;
            };
            out.extend_from_slice(&h[..n]);
            out.extend_from_slice(block);
            out.extend_from_slice(CHUNK_END);
        } else {
            out.extend_from_slice(block);
        }
        conn.write(&out).await.is_ok()
    }

    /// One event carrying a JSON-RPC message (`event` defaults to `message`).
    pub async fn event(&mut self, conn: &mut Conn, event: Option<&[u8]>, data: &[u8]) -> bool {
        let mut out =
            vec![
                0u8;
                data.len() + 64 + data.iter().filter(|b| **b == b'\n' || **b == b'\r').count() * 8
            ];
        let Ok(n) = write_event(
            &SseEvent {
                event,
                data,
                id: None,
                retry: None,
            },
            &mut out,
        ) else {
            return false;
        };
        self.next_ping = Instant::now() + self.keepalive;
        self.put(conn, &out[..n]).await
    }

    /// A keep-alive comment (row `streamable-http-sse-comment-keepalive`).
    pub async fn ping(&mut self, conn: &mut Conn) -> bool {
        let mut out = [0u8; 32];
        let Ok(n) = write_comment(b"keep-alive", &mut out) else {
            return false;
        };
        self.next_ping = Instant::now() + self.keepalive;
        self.put(conn, &out[..n]).await
    }

    /// Ends the stream; true when the connection may carry another request.
    pub async fn finish(self, conn: &mut Conn) -> bool {
        self.chunked && conn.write(LAST_CHUNK).await.is_ok()
    }
}

/// Waits for the next message, the peer's close, or the keep-alive time.
pub(crate) async fn wait(conn: &mut Conn, rx: &Receiver<Item>, ping_at: Instant) -> Wake {
    let item = async { Wake::Item(rx.recv().await.ok()) };
    let peer = async {
        loop {
            if !conn.peer_alive().await {
                return Wake::PeerGone;
            }
        }
    };
    let tick = async {
        Timer::at(ping_at).await;
        Wake::Tick
    };
    future::or(item, future::or(peer, tick)).await
}
