//! Every cap and timeout of the HTTP server, and what happens at each.
//!
//! | limit | at the cap |
//! |---|---|
//! | `max_body` | 413 + JSON-RPC error, decided from Content-Length before reading, or while reading a chunked body; connection closed |
//! | `MAX_HEADERS` fields, `max_head` bytes | 431, connection closed |
//! | `max_connections` | 503 + `Connection: close` right after accept |
//! | `max_sessions` | the least recently used idle session ends to make room; when none is idle, 503 + `Retry-After` + JSON-RPC error naming the limit. One principal holds at most half (past it, its own oldest idle session ends, else 429) |
//! | `head_timeout_ms` | a head not complete this long after its first byte (or after accept): connection closed (slowloris) |
//! | `idle_timeout_ms` | a kept-alive connection with no new request this long: closed |
//! | `body_timeout_ms` | a body not complete this long after its head: connection closed |
//! | `write_timeout_ms` | a peer that does not read what is written this long: connection closed |
//! | `session_idle_ms` | a session with no request and no open stream this long: ended, hub told |
//! | `stream_queue` | messages waiting for one stream; over it the stream is closed |
//! | `sse_keepalive_ms` | period of `: keep-alive` comments on open SSE streams |

/// Most header fields in one request head (a const: it sizes the parser's array).
pub const MAX_HEADERS: usize = 100;

#[derive(Clone, Debug)]
pub struct Limits {
    pub max_body: usize,
    pub max_head: usize,
    pub max_connections: usize,
    pub max_sessions: usize,
    pub head_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    pub body_timeout_ms: u64,
    pub write_timeout_ms: u64,
    pub session_idle_ms: u64,
    pub stream_queue: usize,
    pub sse_keepalive_ms: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body: 32 << 20,
            max_head: 64 << 10,
            max_connections: 256,
            max_sessions: 1024,
            head_timeout_ms: 10_000,
            idle_timeout_ms: 60_000,
            body_timeout_ms: 60_000,
            write_timeout_ms: 30_000,
            session_idle_ms: 30 * 60_000,
            stream_queue: 1024,
            sse_keepalive_ms: 15_000,
        }
    }
}
