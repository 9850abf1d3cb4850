//! HTML escaping, for the pages the listener serves (status, approvals,
//! sign-in): every string from a client, a server or the config passes
//! through [`Esc`] into element content or a quoted attribute.

use std::fmt;

/// HTML-escapes text for element content and quoted attribute values.
pub(crate) struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_five_characters() {
        let evil = "<script>alert('x')</script>\"&";
        assert_eq!(Esc(evil).to_string(), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;");
        assert_eq!(Esc("plain é text").to_string(), "plain é text");
    }
}
