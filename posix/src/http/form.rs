//! `application/x-www-form-urlencoded` fields, as the pages' forms post
//! them and their links carry them in the query.

/// The raw value of `name` in a query string or form body: for values of
/// plain hex and words, which need no decoding.
pub(crate) fn field<'a>(form: &'a str, name: &str) -> Option<&'a str> {
    form.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

/// The value of `name`, decoded (`+` is a space, `%XX` a byte); `None`
/// when absent or not UTF-8 once decoded. A `%` without two hex digits
/// stays as it is.
pub(crate) fn value(form: &str, name: &str) -> Option<String> {
    let raw = field(form, name)?.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < raw.len() => match (hex(raw[i + 1]), hex(raw[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_raw_and_decoded() {
        let rows: &[(&str, &str, Option<&str>, Option<&str>)] = &[
            ("key=ab12&decision=approve", "key", Some("ab12"), Some("ab12")),
            ("key=ab12&decision=approve", "decision", Some("approve"), Some("approve")),
            ("xkey=1", "key", None, None),
            ("accept=files%2Fdelete_all", "accept", Some("files%2Fdelete_all"), Some("files/delete_all")),
            ("accept=a+b%20c", "accept", Some("a+b%20c"), Some("a b c")),
            ("accept=50%", "accept", Some("50%"), Some("50%")),
            ("accept=%zz%4", "accept", Some("%zz%4"), Some("%zz%4")),
            ("accept=%C3%A9", "accept", Some("%C3%A9"), Some("é")),
            ("accept=%FF", "accept", Some("%FF"), None),
            ("token=a%2Bb%3D%3D+c&next=x", "token", Some("a%2Bb%3D%3D+c"), Some("a+b== c")),
            ("xtoken=1&token=2", "token", Some("2"), Some("2")),
            ("token=", "token", Some(""), Some("")),
        ];
        for (form, name, raw, decoded) in rows {
            assert_eq!(field(form, name), *raw, "{form}");
            assert_eq!(value(form, name).as_deref(), *decoded, "{form}");
        }
    }
}
