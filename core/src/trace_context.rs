//! W3C Trace Context `traceparent` (version 00): parsed from an HTTP header
//! or a request's `_meta.traceparent`, and written for the next hop.
//!
//! `00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>`, lowercase.
//! An all-zero trace or parent id is invalid, and so is version `ff`. A
//! version above 00 is read as 00 (its first four fields), as the
//! specification asks of a parser that knows only 00; version 00 itself
//! must be exactly 55 bytes. Surrounding spaces and tabs (an HTTP field's
//! optional whitespace) are ignored. Pure: no allocation, no I/O.

/// The length of a version-00 `traceparent`.
pub const LEN: usize = 55;

/// The `sampled` bit of the trace flags.
pub const SAMPLED: u8 = 0x01;

/// A parsed `traceparent`: who the caller's span is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    /// The caller's span: the parent of the span this hop starts.
    pub parent_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` value; `None` when it is not a valid one.
    pub fn parse(v: &[u8]) -> Option<TraceParent> {
        let v = trim(v);
        if v.len() < LEN {
            return None;
        }
        let version = hex_byte(&v[0..2])?;
        // Version 00 is exactly 55 bytes; a later version may add fields
        // after a dash. ff is forbidden.
        if version == 0xff || (version == 0 && v.len() != LEN) || (v.len() > LEN && v[LEN] != b'-') {
            return None;
        }
        if v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        hex_into(&v[3..35], &mut trace_id)?;
        let mut parent_id = [0u8; 8];
        hex_into(&v[36..52], &mut parent_id)?;
        let flags = hex_byte(&v[53..55])?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, parent_id, flags })
    }

    /// Is the caller's span sampled?
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// This trace with `span` as the parent the next hop sees, version 00,
    /// written into `out`: the 55 bytes of a `traceparent`.
    pub fn write(trace_id: &[u8; 16], span: &[u8; 8], flags: u8, out: &mut [u8; LEN]) {
        out[0] = b'0';
        out[1] = b'0';
        out[2] = b'-';
        hex_write(trace_id, &mut out[3..35]);
        out[35] = b'-';
        hex_write(span, &mut out[36..52]);
        out[52] = b'-';
        hex_write(&[flags], &mut out[53..55]);
    }
}

/// `id` as lowercase hex into `out` (twice its length).
pub fn hex_write(id: &[u8], out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in id.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 15)];
    }
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// Lowercase hex only: the specification forbids uppercase.
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    Some(nibble(two[0])? << 4 | nibble(two[1])?)
}

fn hex_into(hex: &[u8], out: &mut [u8]) -> Option<()> {
    for (i, o) in out.iter_mut().enumerate() {
        *o = hex_byte(&hex[2 * i..2 * i + 2])?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn traceparent_table() {
        let tid = [0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c];
        let pid = [0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31];
        let ok = |flags| Some(TraceParent { trace_id: tid, parent_id: pid, flags });
        let rows: &[(&str, Option<TraceParent>)] = &[
            (GOOD, ok(1)),
            ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", ok(0)),
            (" \t00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 ", ok(1)),
            // A later version: its first four fields, more after a dash.
            ("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09-whatever", ok(9)),
            ("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ok(1)),
            ("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x", None),
            // Version 00 is exactly 55 bytes.
            ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", None),
            ("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", None),
            ("00-00000000000000000000000000000000-b7ad6b7169203331-01", None),
            ("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", None),
            ("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", None),
            ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g", None),
            ("00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", None),
            ("00-0af7651916cd43dd8448eb211c80319-cb7ad6b7169203331-01", None),
            ("0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", None),
            ("", None),
            ("00-", None),
        ];
        for (text, want) in rows {
            assert_eq!(TraceParent::parse(text.as_bytes()), *want, "{text:?}");
        }
    }

    #[test]
    fn written_as_parsed() {
        let t = TraceParent::parse(GOOD.as_bytes()).unwrap();
        assert!(t.sampled());
        let mut out = [0u8; LEN];
        TraceParent::write(&t.trace_id, &t.parent_id, t.flags, &mut out);
        assert_eq!(&out[..], GOOD.as_bytes());
        TraceParent::write(&t.trace_id, &[0xff, 0, 1, 2, 3, 4, 5, 0x10], 0, &mut out);
        assert_eq!(&out[..], b"00-0af7651916cd43dd8448eb211c80319c-ff00010203040510-00");
        assert_eq!(TraceParent::parse(&out).map(|p| p.sampled()), Some(false));
    }
}
