//! Core's framing over blocking `embedded_io` byte streams: a board's UART or
//! USB serial port as well as a host pipe. No allocation: the caller owns
//! every buffer.
//!
//! - [`Reader`] moves bytes from an [`embedded_io::Read`] into a decoder
//!   ([`LineDecoder`](crate::frame::line::LineDecoder),
//!   [`SseDecoder`](crate::frame::sse::SseDecoder)) through a small chunk
//!   buffer, honouring the decoder's `feed` contract;
//! - [`write_line`] writes one newline-delimited message (stdio framing);
//! - [`write_frame`] runs any of core's encoders (an SSE event, an HTTP head,
//!   a chunk header, a JSON-RPC error) into a scratch buffer and writes the
//!   result.
//!
//! ```
//! use mcpx_core::frame::line::{LineDecoder, LineEvent};
//! use mcpx_core::io::{write_line, Reader};
//!
//! let mut port: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
//! let mut reader = Reader::<_, 16>::new(&mut port);
//! let mut lines = LineDecoder::new([0u8; 128]);
//! let mut out = [0u8; 64];
//! let mut tx: &mut [u8] = &mut out;
//! while reader.feed(&mut lines, |d, b| d.feed(b)).expect("a slice reads") {
//!     while let Some(LineEvent::Line(msg)) = lines.next() {
//!         write_line(&mut tx, msg).expect("room for the echo");
//!     }
//! }
//! assert!(out.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"));
//! ```
use embedded_io::{Read, Write};

use crate::frame::line::is_single_line;
use crate::frame::WriteError;

/// Why a frame could not be read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoError<E> {
    /// The stream failed.
    Io(E),
    /// The stream took no byte of a non-empty write (it is closed or full).
    WriteZero,
    /// The frame could not be encoded (see [`WriteError`]); nothing was written.
    Frame(WriteError),
}

impl<E> From<E> for IoError<E> {
    fn from(e: E) -> Self {
        IoError::Io(e)
    }
}

/// Reads from `R` in chunks of `N` bytes (on the stack or wherever the
/// reader lives) and hands them to a decoder.
pub struct Reader<R, const N: usize> {
    inner: R,
    chunk: [u8; N],
    /// `chunk[at..len]` is read but not yet taken by the decoder.
    at: usize,
    len: usize,
}

impl<R: Read, const N: usize> Reader<R, N> {
    /// A reader over `inner`.
    pub fn new(inner: R) -> Self {
        Reader { inner, chunk: [0; N], at: 0, len: 0 }
    }

    /// Gives the decoder the bytes it has not taken yet, reading more first
    /// when there are none; `feed` is the decoder's own `feed` (it returns
    /// how many bytes it took). Returns `Ok(false)` at the end of the stream.
    ///
    /// Call it after draining the decoder's ready frames, in a loop: a
    /// drained decoder always takes some bytes, so every call makes progress.
    pub fn feed<D>(
        &mut self,
        decoder: &mut D,
        feed: impl FnOnce(&mut D, &[u8]) -> usize,
    ) -> Result<bool, IoError<R::Error>> {
        if self.at == self.len {
            self.len = self.inner.read(&mut self.chunk)?.min(N);
            self.at = 0;
            if self.len == 0 {
                return Ok(false);
            }
        }
        let pending = self.chunk.get(self.at..self.len).unwrap_or_default();
        self.at += feed(decoder, pending).min(pending.len());
        Ok(true)
    }

    /// The stream, back.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

/// `write_all` without its panic: a stream that takes nothing is an error.
fn put<W: Write>(w: &mut W, mut bytes: &[u8]) -> Result<(), IoError<W::Error>> {
    while !bytes.is_empty() {
        match w.write(bytes)? {
            0 => return Err(IoError::WriteZero),
            n => bytes = bytes.get(n..).unwrap_or_default(),
        }
    }
    Ok(())
}

/// Writes `msg` and its `\n`: one stdio frame. A message with a raw line
/// break would split into several frames (row stdio-no-embedded-newlines)
/// and is refused with [`WriteError::InvalidField`] before anything is written.
pub fn write_line<W: Write>(w: &mut W, msg: &[u8]) -> Result<(), IoError<W::Error>> {
    if !is_single_line(msg) {
        return Err(IoError::Frame(WriteError::InvalidField));
    }
    put(w, msg)?;
    put(w, b"\n")
}

/// Encodes one frame with `encode` into `scratch` (for example
/// `|out| sse::write_event(&ev, out)`) and writes it.
pub fn write_frame<W: Write>(
    w: &mut W,
    scratch: &mut [u8],
    encode: impl FnOnce(&mut [u8]) -> Result<usize, WriteError>,
) -> Result<(), IoError<W::Error>> {
    let n = encode(scratch).map_err(IoError::Frame)?;
    put(w, scratch.get(..n).ok_or(IoError::Frame(WriteError::Overflow))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::line::{LineDecoder, LineEvent};
    use crate::frame::sse::{write_event, SseDecoder, SseEvent, SseItem};
    use embedded_io::{ErrorKind, ErrorType};

    /// A serial port: reads come in bursts of at most `burst` bytes, writes
    /// take at most `burst` bytes and fail once `limit` bytes are out.
    struct Port<'a> {
        rx: &'a [u8],
        tx: Vec<u8>,
        burst: usize,
        limit: usize,
    }

    #[derive(Debug, PartialEq)]
    struct Broken;

    impl embedded_io::Error for Broken {
        fn kind(&self) -> ErrorKind {
            ErrorKind::BrokenPipe
        }
    }
    impl core::fmt::Display for Broken {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("broken")
        }
    }
    impl core::error::Error for Broken {}

    impl ErrorType for Port<'_> {
        type Error = Broken;
    }
    impl Read for Port<'_> {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, Broken> {
            let n = buf.len().min(self.burst).min(self.rx.len());
            buf[..n].copy_from_slice(&self.rx[..n]);
            self.rx = &self.rx[n..];
            Ok(n)
        }
    }
    impl Write for Port<'_> {
        fn write(&mut self, buf: &[u8]) -> Result<usize, Broken> {
            if self.tx.len() >= self.limit {
                return Err(Broken);
            }
            let n = buf.len().min(self.burst).min(self.limit - self.tx.len());
            self.tx.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> Result<(), Broken> {
            Ok(())
        }
    }

    fn port(rx: &[u8], burst: usize) -> Port<'_> {
        Port { rx, tx: Vec::new(), burst, limit: usize::MAX }
    }

    #[test]
    fn lines_in_bursts_of_any_size_echo_back_whole() {
        let input = b"{\"a\":1}\r\n\n{\"b\":\"two\"}\n{\"partial\":";
        for burst in 1..input.len() + 2 {
            let mut p = port(input, burst);
            let mut lines = LineDecoder::new([0u8; 32]);
            let mut got = Vec::new();
            let mut reader = Reader::<_, 4>::new(&mut p);
            while reader.feed(&mut lines, |d, b| d.feed(b)).unwrap() {
                while let Some(ev) = lines.next() {
                    match ev {
                        LineEvent::Line(l) => got.push(l.to_vec()),
                        LineEvent::TooLarge { len, .. } => panic!("too large: {len}"),
                    }
                }
            }
            assert_eq!(got, [b"{\"a\":1}".to_vec(), b"{\"b\":\"two\"}".to_vec()], "burst {burst}");
            // The unterminated tail stays in the decoder, not lost.
            assert_eq!(lines.buffered(), b"{\"partial\":".len());
            for l in &got {
                write_line(&mut p, l).unwrap();
            }
            assert_eq!(p.tx, b"{\"a\":1}\n{\"b\":\"two\"}\n");
        }
    }

    #[test]
    fn over_long_line_is_reported_and_the_next_one_read() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n");
        let mut p = port(&input, 7);
        let mut lines = LineDecoder::new([0u8; 16]);
        let mut reader = Reader::<_, 8>::new(&mut p);
        let mut got = Vec::new();
        while reader.feed(&mut lines, |d, b| d.feed(b)).unwrap() {
            while let Some(ev) = lines.next() {
                got.push(match ev {
                    LineEvent::Line(l) => format!("line {}", core::str::from_utf8(l).unwrap()),
                    LineEvent::TooLarge { len, .. } => format!("too large {len}"),
                });
            }
        }
        assert_eq!(got, ["too large 100", "line ok"]);
    }

    #[test]
    fn sse_events_written_and_read_over_a_port() {
        let mut scratch = [0u8; 128];
        let mut p = port(b"", 5);
        for (id, data) in [(&b"1"[..], &b"{\"x\":1}"[..]), (b"2", b"a\nb")] {
            let ev = SseEvent { event: None, data, id: Some(id), retry: None };
            write_frame(&mut p, &mut scratch, |out| write_event(&ev, out)).unwrap();
        }
        let written = p.tx.clone();
        let mut rx = port(&written, 3);
        let mut sse = SseDecoder::new([0u8; 64]);
        let mut reader = Reader::<_, 5>::new(&mut rx);
        let mut got = Vec::new();
        while reader.feed(&mut sse, |d, b| d.feed(b)).unwrap() {
            while let Some(SseItem::Event(e)) = sse.next() {
                got.push((e.id.unwrap().to_vec(), e.data.to_vec()));
            }
        }
        assert_eq!(got, [(b"1".to_vec(), b"{\"x\":1}".to_vec()), (b"2".to_vec(), b"a\nb".to_vec())]);
    }

    #[test]
    fn write_errors_are_typed_and_nothing_is_half_framed() {
        let mut p = port(b"", 4);
        assert_eq!(write_line(&mut p, b"a\nb"), Err(IoError::Frame(WriteError::InvalidField)));
        assert!(p.tx.is_empty());
        let mut small = [0u8; 4];
        let ev = SseEvent { data: b"too long for four bytes", ..SseEvent::default() };
        assert_eq!(
            write_frame(&mut p, &mut small, |out| write_event(&ev, out)),
            Err(IoError::Frame(WriteError::Overflow))
        );
        assert!(p.tx.is_empty());
        p.limit = 3;
        assert_eq!(write_line(&mut p, b"abcdef"), Err(IoError::Io(Broken)));
        // A stream that takes nothing: an error, not a panic or a spin.
        let mut full: &mut [u8] = &mut [];
        assert!(matches!(write_line(&mut full, b"x"), Err(IoError::Io(_) | IoError::WriteZero)));
    }
}
