//! A minimal JSON scanner for the bench's own hot paths (the echo upstream
//! and the load generators): finds member spans in a message without
//! building a value. It trusts its input to be JSON; on malformed input it
//! returns `None` rather than guessing.

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string starting at `b[i] == b'"'`. Jumps
/// from quote or backslash to the next (memchr): a byte at a time, a 64 KiB
/// echo's checks cost its load generator more CPU than the hop it measured.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        j += memchr::memchr2(b'"', b'\\', &b[j..])?;
        match b[j] {
            b'\\' => j += 2,
            _ => return Some(j + 1),
        }
    }
    None
}

/// The end (exclusive) of the value starting at `i` (after whitespace).
pub fn value_end(b: &[u8], i: usize) -> Option<usize> {
    let i = ws(b, i);
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// The raw bytes of member `key` of the object `obj` (whole object bytes,
/// surrounding whitespace allowed): for strings, including the quotes.
pub fn member<'a>(obj: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut i = ws(obj, 0);
    if obj.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = ws(obj, i);
        match *obj.get(i)? {
            b'}' => return None,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let kend = string_end(obj, i)?;
        let k = &obj[i + 1..kend - 1];
        i = ws(obj, kend);
        if obj.get(i) != Some(&b':') {
            return None;
        }
        let vstart = ws(obj, i + 1);
        let vend = value_end(obj, vstart)?;
        if k == key.as_bytes() {
            return Some(&obj[vstart..vend]);
        }
        i = vend;
    }
}

/// The contents of a JSON string without its quotes (escapes left as is).
pub fn str_inner(raw: &[u8]) -> Option<&[u8]> {
    (raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"').then(|| &raw[1..raw.len() - 1])
}

/// A non-negative integer value.
pub fn as_u64(raw: &[u8]) -> Option<u64> {
    std::str::from_utf8(raw).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_nesting() {
        let m = br#" {"jsonrpc":"2.0","id":7,"params":{"name":"e\"cho","arguments":{"text":"a}b\\"}},"method":"tools/call"} "#;
        assert_eq!(member(m, "id"), Some(&b"7"[..]));
        assert_eq!(member(m, "method"), Some(&br#""tools/call""#[..]));
        let p = member(m, "params").unwrap();
        assert_eq!(member(p, "name"), Some(&br#""e\"cho""#[..]));
        let a = member(p, "arguments").unwrap();
        assert_eq!(
            member(a, "text").and_then(str_inner),
            Some(&br#"a}b\\"#[..])
        );
        assert_eq!(member(m, "nope"), None);
        assert_eq!(value_end(br#" "a\"b\\" ,"#, 0), Some(9));
        assert_eq!(value_end(br#""a\"#, 0), None);
        assert_eq!(value_end(br#""a\""#, 0), None);
        assert_eq!(as_u64(member(m, "id").unwrap()), Some(7));
    }
}
