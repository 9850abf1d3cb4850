//! Exposed names for aggregated tools and prompts.
//!
//! mcpx shows every upstream's tools (and prompts) to its clients under one
//! namespace: `prefix + separator + name`, e.g. `github__create_issue`. Real
//! clients reject or mangle names outside `[A-Za-z0-9_-]{1,64}` (several LLM
//! APIs enforce exactly that), so the exposed name must always be in that set.
//!
//! Rule (pure and deterministic, so a name is the same across restarts):
//! 1. Concatenate `prefix`, `separator` and `name` (`prefix` empty: `name` alone).
//! 2. If the result is 1..=64 bytes of `[A-Za-z0-9_-]` and `salt == 0`, that is
//!    the exposed name: the common case, readable and reversible by eye.
//! 3. Otherwise replace every other character by `_`, keep at most 55
//!    characters, and append `_` and 8 lowercase hex digits of a hash of the
//!    *original* prefix, separator, name and salt. Two names that differ only in
//!    replaced characters (`a.b`, `a b`) thus still get different exposed names.
//!    When the 55 do not hold everything, the prefix is shortened before the
//!    tool's own name: to its first [`SHORT_PREFIX`] characters (the same for
//!    every name of a server, so its names still share a prefix), and only
//!    then is the name cut. A long server prefix thus cannot swallow the
//!    names (`git_status`, `git_log`) that tell its tools apart.
//!
//! Separators: the one configured may also use `.`, which tool names may
//! hold from revision 2025-11-25 on (row `tools-name-charset`). Names are then
//! made with [`legacy_separator`] (`__`), valid for every client, and
//! [`respell`] gives the same name with the configured separator for the
//! clients whose revision allows it. Both spellings name the same item.
//!
//! `salt` lets a caller that finds two upstream names mapping to the same exposed
//! name (very unlikely after step 3, or two unprefixed servers sharing a tool
//! name) derive another deterministic candidate: try salt 1, 2, ... for the
//! later one. Mapping back is by lookup in the caller's table, never by parsing.

use heapless::String;

/// Longest exposed name.
pub const MAX_LEN: usize = 64;
/// Length of the hash suffix including its `_`.
const SUFFIX_LEN: usize = 9;
/// Characters of a prefix kept when a name does not fit.
pub const SHORT_PREFIX: usize = 16;

/// The separator used unless configured otherwise.
pub const DEFAULT_SEPARATOR: &str = "__";

/// An exposed name: always valid (see [`is_valid`]).
pub type Name = String<MAX_LEN>;

/// May `b` appear in an exposed name?
pub const fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Is `s` acceptable to clients as a tool name: 1..=64 of `[A-Za-z0-9_-]`?
pub fn is_valid(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_LEN && s.bytes().all(is_name_byte)
}

/// May `b` appear in a configured separator: a name byte, or `.`?
pub const fn is_separator_byte(b: u8) -> bool {
    is_name_byte(b) || b == b'.'
}

/// The separator names are made with for a configured `separator`: itself,
/// or [`DEFAULT_SEPARATOR`] when it has a `.` (no name byte before 2025-11-25).
pub fn legacy_separator(separator: &str) -> &str {
    if separator.bytes().all(is_name_byte) {
        separator
    } else {
        DEFAULT_SEPARATOR
    }
}

/// Name `e` (made by [`expose_detail`] with [`legacy_separator`]`(separator)`)
/// spelled with `separator`, for clients whose tool names may hold `.`.
/// `None` when that is the same name, `e` has no prefix, or the result would
/// be over [`MAX_LEN`].
pub fn respell(e: &Exposed, separator: &str) -> Option<Exposed> {
    let legacy = legacy_separator(separator);
    let bare = e.applied_prefix().strip_suffix(legacy)?;
    if legacy == separator || bare.is_empty() {
        return None;
    }
    let mut name = Name::new();
    name.push_str(bare).ok()?;
    name.push_str(separator).ok()?;
    name.push_str(&e.name[e.prefix_len..]).ok()?;
    Some(Exposed { name, prefix_len: bare.len() + separator.len(), change: e.change })
}

/// FNV-1a over several parts, each followed by a 0xff separator byte (which
/// never occurs in UTF-8), so `("ab","c")` and `("a","bc")` differ.
pub fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(core::iter::once(&0xffu8)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// How [`expose`] changed a name (for the log line telling the user).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Exposed as `prefix + separator + name`.
    Kept,
    /// Characters outside `[A-Za-z0-9_-]` replaced, and a hash suffix added.
    Replaced,
    /// Over [`MAX_LEN`]: shortened (the prefix first), and a hash suffix added.
    Shortened,
    /// Given another salt to tell it from an equal exposed name.
    Salted,
}

/// An exposed name and how it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposed {
    pub name: Name,
    /// Bytes of `name` that are the prefix and separator, as applied.
    pub prefix_len: usize,
    pub change: Change,
}

impl Exposed {
    /// The prefix and separator as applied (shortened, characters replaced).
    pub fn applied_prefix(&self) -> &str {
        &self.name[..self.prefix_len]
    }
}

/// Server `name` as one URI path segment, in valid tool-name characters
/// (a hub's `mcpx://<segment>/…` and `ui://<segment>/…` URIs).
pub fn segment(name: &str) -> Name {
    expose("", "", name, 0)
}

/// The exposed name of upstream name `name` under `prefix` and `separator`.
/// See the module documentation for the rule.
pub fn expose(prefix: &str, separator: &str, name: &str, salt: u32) -> Name {
    expose_detail(prefix, separator, name, salt).name
}

/// [`expose`], telling how the name was made.
pub fn expose_detail(prefix: &str, separator: &str, name: &str, salt: u32) -> Exposed {
    let sep = if prefix.is_empty() { "" } else { separator };
    let parts = [prefix, sep, name];
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let clean = parts.iter().all(|p| p.bytes().all(is_name_byte));
    let fits = (1..=MAX_LEN).contains(&total);
    let mut out = Name::new();
    if clean && fits && salt == 0 {
        for p in parts {
            let _ = out.push_str(p);
        }
        return Exposed { name: out, prefix_len: prefix.len() + sep.len(), change: Change::Kept };
    }
    let change = if salt > 0 {
        Change::Salted
    } else if total > MAX_LEN {
        Change::Shortened
    } else {
        Change::Replaced
    };
    // Each character becomes one byte (itself or `_`). What does not fit
    // shortens the prefix to SHORT_PREFIX, then the name.
    let budget = MAX_LEN - SUFFIX_LEN;
    let count = |s: &str| s.chars().count();
    let (mut pre_n, sep_n, mut name_n) = (count(prefix), count(sep), count(name));
    if pre_n + sep_n + name_n > budget {
        pre_n = pre_n.min(SHORT_PREFIX);
        name_n = name_n.min(budget.saturating_sub(pre_n + sep_n));
    }
    let pre_n = pre_n.min(budget);
    let sep_n = sep_n.min(budget - pre_n);
    let name_n = name_n.min(budget - pre_n - sep_n);
    let push_clean = |out: &mut Name, p: &str, n: usize| {
        for ch in p.chars().take(n) {
            let _ = out.push(if ch.is_ascii() && is_name_byte(ch as u8) { ch } else { '_' });
        }
    };
    push_clean(&mut out, prefix, pre_n);
    push_clean(&mut out, sep, sep_n);
    let prefix_len = out.len();
    push_clean(&mut out, name, name_n);
    let h = hash(&[prefix.as_bytes(), separator.as_bytes(), name.as_bytes(), &salt.to_le_bytes()]);
    let _ = out.push('_');
    for i in (0..8).rev() {
        let nib = ((h >> (i * 4)) & 0xf) as u8;
        let _ = out.push(char::from(if nib < 10 { b'0' + nib } else { b'a' + nib - 10 }));
    }
    Exposed { name: out, prefix_len, change }
}

/// Does `name` match `pattern`, where `*` matches any run of characters
/// (used for per-server tool allow/deny lists)?
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(expose("github", "__", "create_issue", 0).as_str(), "github__create_issue");
        assert_eq!(expose("", "__", "echo", 0).as_str(), "echo");
        assert_eq!(expose("a-b", "-", "c", 0).as_str(), "a-b-c");
    }

    #[test]
    fn invalid_characters_are_replaced_and_hashed() {
        let a = expose("fs", "__", "read.file", 0);
        let b = expose("fs", "__", "read file", 0);
        assert!(is_valid(&a) && is_valid(&b));
        assert!(a.starts_with("fs__read_file_"));
        assert_ne!(a, b);
        assert_eq!(a, expose("fs", "__", "read.file", 0), "deterministic");
        assert!(is_valid(&expose("ünï", "__", "cødé", 0)));
        assert!(is_valid(&expose("", "__", "", 0)));
    }

    #[test]
    fn long_names_are_shortened_to_64() {
        let long = "x".repeat(100);
        let a = expose("server", "__", &long, 0);
        assert_eq!(a.len(), 64);
        assert!(is_valid(&a));
        let mut other = long.clone();
        other.push('y');
        assert_ne!(a, expose("server", "__", &other, 0));
        let exact = "y".repeat(56);
        assert_eq!(expose("server", "__", &exact, 0).len(), 64);
        assert_eq!(expose("server", "__", &exact, 0).as_str(), &["server__", &exact].concat());
    }

    #[test]
    fn a_long_prefix_is_shortened_before_the_tools_own_name() {
        let prefix = "a_server_name_long_enough_to_take_almost_all_the_room_there_is";
        let status = expose_detail(prefix, "__", "git_status", 0);
        let log = expose_detail(prefix, "__", "git_log", 0);
        assert_eq!(status.change, Change::Shortened);
        // The tool's own name survives in full, right after the applied prefix.
        assert!(status.name[status.prefix_len..].starts_with("git_status_"), "{}", status.name);
        assert!(log.name[log.prefix_len..].starts_with("git_log_"), "{}", log.name);
        assert!(is_valid(&status.name) && is_valid(&log.name));
        // Every shortened name of the server gets the same short prefix; a
        // name too long even so is cut after it.
        assert_eq!(status.applied_prefix(), "a_server_name_lo__");
        assert_eq!(log.applied_prefix(), status.applied_prefix());
        let long = expose_detail(prefix, "__", &"n".repeat(100), 0);
        assert_eq!(long.applied_prefix(), status.applied_prefix());
        assert_eq!(long.name.len(), MAX_LEN);
        // What fits stays as it is.
        let kept = expose_detail("git", "__", "git_status", 0);
        assert_eq!((kept.name.as_str(), kept.applied_prefix(), kept.change), ("git__git_status", "git__", Change::Kept));
        assert_eq!(expose_detail("fs", "__", "read.file", 0).change, Change::Replaced);
        assert_eq!(expose_detail("", "__", "echo", 1).change, Change::Salted);
    }

    #[test]
    fn a_dotted_separator_respells_names_made_with_the_default() {
        assert_eq!(legacy_separator("."), DEFAULT_SEPARATOR);
        assert_eq!(legacy_separator("-"), "-");
        let plain = expose_detail("github", legacy_separator("."), "create_issue", 0);
        let dotted = respell(&plain, ".").unwrap();
        assert_eq!((dotted.name.as_str(), dotted.applied_prefix()), ("github.create_issue", "github."));
        // A shortened name keeps its shortened prefix and hash suffix.
        let prefix = "a_server_name_long_enough_to_take_almost_all_the_room_there_is";
        let long = expose_detail(prefix, DEFAULT_SEPARATOR, "git_status", 0);
        let d = respell(&long, ".").unwrap();
        assert_eq!(d.applied_prefix(), "a_server_name_lo.");
        assert_eq!(&d.name[d.prefix_len..], &long.name[long.prefix_len..]);
        assert!(d.name.bytes().all(is_separator_byte) && d.name.len() < MAX_LEN);
        // Nothing to respell: no prefix, or no dot in the separator.
        assert_eq!(respell(&expose_detail("", DEFAULT_SEPARATOR, "echo", 0), "."), None);
        assert_eq!(respell(&expose_detail("fs", "-", "read", 0), "-"), None);
        // Too long with a longer separator: the legacy spelling only.
        let full = expose_detail("s", DEFAULT_SEPARATOR, &"n".repeat(61), 0);
        assert_eq!(full.name.len(), MAX_LEN);
        assert_eq!(respell(&full, "..."), None);
    }

    #[test]
    fn salt_gives_another_valid_name() {
        let a = expose("", "__", "echo", 0);
        let b = expose("", "__", "echo", 1);
        assert_ne!(a, b);
        assert!(is_valid(&b) && b.starts_with("echo_"));
    }

    proptest::proptest! {
        #[test]
        fn every_name_is_valid_and_deterministic(prefix in ".{0,40}", name in ".{0,200}", salt in 0u32..4) {
            let n = expose(&prefix, "__", &name, salt);
            proptest::prop_assert!(is_valid(&n), "{:?}", n);
            proptest::prop_assert_eq!(&n, &expose(&prefix, "__", &name, salt));
        }

        #[test]
        fn distinct_names_stay_distinct(a in "[a-z.]{1,80}", b in "[a-z.]{1,80}") {
            proptest::prop_assume!(a != b);
            proptest::prop_assert_ne!(expose("s", "__", &a, 0), expose("s", "__", &b, 0));
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("*", "anything"));
        assert!(glob_match("read_*", "read_file"));
        assert!(glob_match("*_file", "read_file"));
        assert!(glob_match("r*d*e", "read_file"));
        assert!(!glob_match("read_*", "write_file"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
    }
}
