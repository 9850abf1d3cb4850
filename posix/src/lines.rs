//! Newline-delimited message framing for byte streams (stdio).
//!
//! Kept behind [`LineReader`] / [`read_lines`] so the reader loops do not
//! care which decoder splits the bytes.

use std::io;

use smol::io::{AsyncRead, AsyncReadExt};

/// What the decoder found.
#[derive(Debug, PartialEq, Eq)]
pub enum LineEvent<'a> {
    /// One line without its `\n` (and without a `\r` before it).
    Line(&'a [u8]),
    /// A line longer than the limit was dropped; `len` bytes, without `\n`.
    TooLarge { len: usize },
}

/// Splits bytes into lines of at most `max` bytes. Longer lines are dropped
/// (without buffering them) and reported once with their length; the stream
/// goes on with the next line.
pub struct LineReader {
    buf: Vec<u8>,
    /// Start of the current line in `buf`.
    head: usize,
    /// Where to resume looking for `\n`.
    scan: usize,
    max: usize,
    /// Bytes dropped so far of an over-long line still being read.
    skipping: Option<usize>,
    /// The last byte dropped (to not count a `\r` before the `\n`).
    last_skipped: u8,
    /// An over-long line that has ended and is yet to be reported.
    too_large: Option<usize>,
}

impl LineReader {
    pub fn new(max: usize) -> LineReader {
        LineReader { buf: Vec::new(), head: 0, scan: 0, max, skipping: None, last_skipped: 0, too_large: None }
    }

    pub fn feed(&mut self, mut data: &[u8]) {
        if self.head > 0 {
            self.buf.drain(..self.head);
            self.scan -= self.head;
            self.head = 0;
        }
        if let Some(skipped) = self.skipping {
            match data.iter().position(|&b| b == b'\n') {
                None => {
                    self.skipping = Some(skipped + data.len());
                    if let Some(&b) = data.last() {
                        self.last_skipped = b;
                    }
                    return;
                }
                Some(i) => {
                    let mut len = skipped + i;
                    let before = if i > 0 { data[i - 1] } else { self.last_skipped };
                    if before == b'\r' {
                        len -= 1;
                    }
                    self.too_large = Some(len);
                    self.skipping = None;
                    data = &data[i + 1..];
                }
            }
        }
        self.buf.extend_from_slice(data);
    }

    pub fn next(&mut self) -> Option<LineEvent<'_>> {
        if let Some(len) = self.too_large.take() {
            return Some(LineEvent::TooLarge { len });
        }
        match self.buf[self.scan..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                let end = self.scan + i;
                let start = self.head;
                self.head = end + 1;
                self.scan = self.head;
                let line = strip_cr(&self.buf[start..end]);
                if line.len() > self.max {
                    return Some(LineEvent::TooLarge { len: line.len() });
                }
                Some(LineEvent::Line(line))
            }
            None => {
                self.scan = self.buf.len();
                let pending = self.buf.len() - self.head;
                if pending > self.max {
                    self.skipping = Some(pending);
                    self.last_skipped = *self.buf.last().unwrap_or(&0);
                    self.buf.clear();
                    self.head = 0;
                    self.scan = 0;
                }
                None
            }
        }
    }

    /// At end of input: whatever is left, as a last line.
    pub fn finish(&mut self) -> Option<LineEvent<'_>> {
        if let Some(len) = self.too_large.take() {
            return Some(LineEvent::TooLarge { len });
        }
        if let Some(len) = self.skipping.take() {
            return Some(LineEvent::TooLarge { len });
        }
        if self.head < self.buf.len() {
            let start = self.head;
            self.head = self.buf.len();
            self.scan = self.head;
            let line = strip_cr(&self.buf[start..]);
            if line.len() > self.max {
                return Some(LineEvent::TooLarge { len: line.len() });
            }
            return Some(LineEvent::Line(line));
        }
        None
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads `r` to its end, calling `f` for each line or over-long line.
/// A last line without `\n` is delivered too.
pub async fn read_lines<R: AsyncRead + Unpin>(
    mut r: R,
    max: usize,
    mut f: impl FnMut(LineEvent<'_>),
) -> io::Result<()> {
    let mut dec = LineReader::new(max);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        dec.feed(&chunk[..n]);
        while let Some(ev) = dec.next() {
            f(ev);
        }
    }
    while let Some(ev) = dec.finish() {
        f(ev);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut d = LineReader::new(max);
        let mut out = Vec::new();
        let show = |e: LineEvent<'_>| match e {
            LineEvent::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
            LineEvent::TooLarge { len } => format!("BIG:{len}"),
        };
        for c in chunks {
            d.feed(c);
            while let Some(e) = d.next() {
                out.push(show(e));
            }
        }
        while let Some(e) = d.finish() {
            out.push(show(e));
        }
        out
    }

    #[test]
    fn splits_lines_across_chunks() {
        assert_eq!(run(100, &[b"ab", b"c\nd", b"e\r\n\nf"]), ["L:abc", "L:de", "L:", "L:f"]);
        assert_eq!(run(100, &[b"x\n"]), ["L:x"]);
        assert_eq!(run(100, &[]), Vec::<String>::new());
    }

    #[test]
    fn over_long_lines_are_reported_and_skipped() {
        assert_eq!(run(3, &[b"abcd\nok\n"]), ["BIG:4", "L:ok"]);
        assert_eq!(run(3, &[b"abcd", b"efg", b"h\nok\n"]), ["BIG:8", "L:ok"]);
        assert_eq!(run(3, &[b"abcd", b"ef\r", b"\nok"]), ["BIG:6", "L:ok"]);
        assert_eq!(run(3, &[b"abcdef"]), ["BIG:6"]);
        assert_eq!(run(3, &[b"abc\n"]), ["L:abc"]);
    }

    #[test]
    fn reads_from_an_async_stream() {
        let data: &[u8] = b"{\"a\":1}\n{\"b\":2}\npartial";
        let mut got = Vec::new();
        smol::block_on(read_lines(data, 100, |e| {
            if let LineEvent::Line(l) = e {
                got.push(String::from_utf8_lossy(l).into_owned());
            }
        }))
        .unwrap();
        assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "partial"]);
    }
}
