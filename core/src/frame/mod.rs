//! Framing: newline-delimited JSON (stdio), SSE events, HTTP/1.1 heads and bodies.
