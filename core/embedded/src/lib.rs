//! mcpx-core on a microcontroller: a minimal MCP endpoint on a serial port
//! (a UART or USB CDC), `no_std` and without allocation. It reads
//! newline-delimited JSON-RPC from the port's receive half, parses each
//! message once with core's envelope, answers `ping` with an empty result and
//! any other request with -32601, and writes the answers to the transmit
//! half; notifications and responses get no answer, and a line that is not a
//! valid message gets the JSON-RPC error core's envelope names for it.
//!
//! A board's HAL gives the two halves (`uart.split()`); anything that
//! implements `embedded_io::{Read, Write}` works, on the host too (see the
//! tests). CI builds this crate for `thumbv7em-none-eabihf` (Cortex-M4F).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use embedded_io::{Read, Write};
use mcpx_core::envelope::{Envelope, Kind};
use mcpx_core::error::ErrorCode;
use mcpx_core::frame::line::{LineDecoder, LineEvent};
use mcpx_core::io::{write_frame, IoError, Reader};
use mcpx_core::rewrite::{write_error, write_result};

/// Longest message taken in, in bytes; a longer line is skipped.
pub const MAX_LINE: usize = 512;
/// Longest answer written (the id echoed plus the error message).
const MAX_ANSWER: usize = MAX_LINE + 128;

/// Serves until `rx` ends.
pub fn serve<R: Read, W: Write>(rx: R, tx: &mut W) -> Result<(), Error<R::Error, W::Error>> {
    let mut reader = Reader::<R, 64>::new(rx);
    let mut lines = LineDecoder::new([0u8; MAX_LINE]);
    let mut answer = [0u8; MAX_ANSWER];
    while reader.feed(&mut lines, |d, b| d.feed(b)).map_err(Error::Read)? {
        while let Some(LineEvent::Line(msg)) = lines.next() {
            answer_to(msg, tx, &mut answer).map_err(Error::Write)?;
        }
    }
    Ok(())
}

/// Why [`serve`] stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Error<R, W> {
    Read(IoError<R>),
    Write(IoError<W>),
}

/// Writes the answer to one message, if it has one.
fn answer_to<W: Write>(msg: &[u8], tx: &mut W, scratch: &mut [u8]) -> Result<(), IoError<W::Error>> {
    let env = match Envelope::parse(msg) {
        Ok(env) => env,
        Err(e) => return framed(tx, scratch, |out| e.write_response(out).ok()),
    };
    let (Kind::Request, Some(id)) = (env.kind(), env.id_bytes()) else {
        return Ok(());
    };
    if env.method_is("ping") {
        framed(tx, scratch, |out| write_result(id, b"{}", out).ok())
    } else {
        let e = ErrorCode::MethodNotFound;
        framed(tx, scratch, |out| write_error(Some(id), e.code().into(), e.message(), None, out).ok())
    }
}

/// Writes what `encode` puts in `scratch`, then the line's `\n`.
fn framed<W: Write>(
    tx: &mut W,
    scratch: &mut [u8],
    encode: impl FnOnce(&mut [u8]) -> Option<usize>,
) -> Result<(), IoError<W::Error>> {
    write_frame(tx, scratch, |out| {
        let n = encode(out).ok_or(mcpx_core::frame::WriteError::Overflow)?;
        let nl = out.get_mut(n).ok_or(mcpx_core::frame::WriteError::Overflow)?;
        *nl = b'\n';
        Ok(n + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> String {
        let mut out = Vec::new();
        serve(input, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn answers_pings_and_refuses_other_requests() {
        let out = run(concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"tools/list\"}\r\n",
            "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"method\":\"ping\"}\n",
        )
        .as_bytes());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0], r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(lines[1].starts_with(r#"{"jsonrpc":"2.0","id":"b","error":{"code":-32601"#), "{}", lines[1]);
        // Ids pass byte for byte, however wide.
        assert_eq!(lines[2], r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#);
    }

    #[test]
    fn bad_lines_get_their_error_and_long_lines_are_skipped() {
        let mut input = b"not json\n".to_vec();
        input.extend(core::iter::repeat_n(b'x', MAX_LINE * 2));
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
        let out = run(&input);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].contains("\"code\":-32700"), "{}", lines[0]);
        assert_eq!(lines[1], r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
    }

    #[test]
    fn a_full_transmit_buffer_is_an_error() {
        let mut tx = [0u8; 8];
        let r = serve(&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..], &mut &mut tx[..]);
        assert!(matches!(r, Err(Error::Write(_))), "{r:?}");
    }
}
