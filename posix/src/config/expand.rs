//! `${VAR}` references in config strings.

use super::error::ExpandError;
use crate::host::dirs::EnvLookup;

/// Replaces `${VAR}` and `${VAR:-default}`; `$${` is a literal `${`. Any other
/// `$` is kept as is.
pub fn expand(s: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    if !s.contains('$') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(body_on) = after.strip_prefix('{') {
            let end = body_on.find('}').ok_or_else(|| ExpandError::Unterminated { text: s.to_string() })?;
            out.push_str(&reference(&body_on[..end], env)?);
            rest = &body_on[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one reference, `NAME` or `NAME:-default` (an empty value
/// takes the default too).
fn reference(body: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    let (name, default) = match body.find(":-") {
        Some(i) => (&body[..i], Some(&body[i + 2..])),
        None => (body, None),
    };
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(ExpandError::BadReference { body: body.to_string() });
    }
    match (env(name), default) {
        (Some(v), Some(d)) if v.is_empty() => Ok(d.to_string()),
        (Some(v), _) => Ok(v),
        (None, Some(d)) => Ok(d.to_string()),
        (None, None) => Err(ExpandError::Unset { name: name.to_string() }),
    }
}
