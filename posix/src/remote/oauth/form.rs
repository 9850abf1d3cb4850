//! `application/x-www-form-urlencoded`: token and registration request
//! bodies, authorization request and redirect queries.

/// Percent-encodes everything but the unreserved characters (RFC 3986).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `k=v&k=v`.
pub fn encode(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v))).collect::<Vec<_>>().join("&")
}

/// The pairs of a query string (`+` is a space); undecodable escapes are kept.
pub fn decode(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_component(k), decode_component(v))
        })
        .collect()
}

fn decode_component(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit() => {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let q = encode(&[("redirect_uri", "http://127.0.0.1:5/callback"), ("scope", "a b"), ("x", "ü&=")]);
        assert_eq!(q, "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&scope=a%20b&x=%C3%BC%26%3D");
        assert_eq!(
            decode(&q),
            [("redirect_uri".into(), "http://127.0.0.1:5/callback".into()), ("scope".into(), "a b".into()), ("x".into(), "ü&=".into())]
        );
        assert_eq!(decode("a=1+2&b&c=%zz&d=%4"), [("a".into(), "1 2".into()), ("b".into(), "".into()), ("c".into(), "%zz".into()), ("d".into(), "%4".into())]);
    }
}
