//! `${VAR}` references in config strings, and `${secret:NAME}`, a
//! reference to the secret `NAME` of whoever a server's process is for
//! (`"secrets"`), kept through loading and resolved when a principal's
//! instance starts ([`resolve_secrets`]).

use super::error::ExpandError;
use crate::host::dirs::EnvLookup;

/// What introduces a per-principal secret's reference.
const SECRET: &str = "secret:";

/// Replaces `${VAR}` and `${VAR:-default}`; `$${` is a literal `${`. Any other
/// `$` is kept as is. A `${secret:NAME}` is refused: only a server's `env`
/// and `headers` take them ([`expand_keeping_secrets`]).
pub fn expand(s: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    expand_with(s, env, false)
}

/// [`expand`], keeping every `${secret:NAME}` (and its escaped form
/// `$${secret:`) as written, for [`resolve_secrets`].
pub fn expand_keeping_secrets(s: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    expand_with(s, env, true)
}

fn expand_with(s: &str, env: EnvLookup<'_>, keep_secrets: bool) -> Result<String, ExpandError> {
    if !s.contains('$') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            // An escaped secret stays escaped until it is resolved.
            out.push_str(if keep_secrets && cfg!(feature = "secrets") && tail.starts_with(SECRET) { "$${" } else { "${" });
            rest = tail;
        } else if let Some(body_on) = after.strip_prefix('{') {
            let end = body_on.find('}').ok_or_else(|| ExpandError::Unterminated { text: s.to_string() })?;
            let body = &body_on[..end];
            // (A build without per-principal secrets reads one as a bad reference.)
            match body.strip_prefix(SECRET).filter(|_| cfg!(feature = "secrets")) {
                Some(name) if !valid_name(name) => return Err(ExpandError::BadReference { body: body.to_string() }),
                Some(_) if keep_secrets => out.push_str(&rest[pos..pos + end + 3]),
                #[cfg(feature = "secrets")]
                Some(_) => return Err(ExpandError::SecretHere { body: body.to_string() }),
                _ => out.push_str(&reference(body, env)?),
            }
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
    if !valid_name(name) {
        return Err(ExpandError::BadReference { body: body.to_string() });
    }
    match (env(name), default) {
        (Some(v), Some(d)) if v.is_empty() => Ok(d.to_string()),
        (Some(v), _) => Ok(v),
        (None, Some(d)) => Ok(d.to_string()),
        (None, None) => Err(ExpandError::Unset { name: name.to_string() }),
    }
}

/// A variable's or secret's name: a letter or `_`, then letters, digits, `_`.
fn valid_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The names of the secrets `s` refers to (kept by [`expand_keeping_secrets`]).
#[cfg(feature = "secrets")]
pub fn secret_refs(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || loop {
        let i = rest.find("${")?;
        let escaped = rest[..i].ends_with('$');
        rest = &rest[i + 2..];
        let Some(tail) = rest.strip_prefix(SECRET).filter(|_| !escaped) else { continue };
        let end = tail.find('}')?;
        rest = &tail[end + 1..];
        return Some(&tail[..end]);
    })
}

/// `s` with each `${secret:NAME}` replaced by `lookup(NAME)` and each
/// escaped `$${secret:` written as the literal `${secret:`; the name of
/// the first secret `lookup` does not have, if any.
#[cfg(feature = "secrets")]
pub fn resolve_secrets<'v>(s: &str, lookup: impl Fn(&str) -> Option<&'v str>) -> Result<String, String> {
    if !s.contains(SECRET) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            out.push_str(&rest[..i - 1]);
            out.push_str("${");
            rest = &rest[i + 2..];
            continue;
        }
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        match tail.strip_prefix(SECRET).and_then(|t| t.find('}').map(|e| &t[..e])) {
            Some(name) => {
                out.push_str(lookup(name).ok_or_else(|| name.to_string())?);
                rest = &tail[SECRET.len() + name.len() + 1..];
            }
            None => {
                out.push_str("${");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}
