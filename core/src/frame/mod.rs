//! Framing: newline-delimited JSON (stdio), SSE events, HTTP/1.1 heads and bodies.
//! No JSON knowledge lives here.
pub mod http;
pub mod line;
pub mod sse;
