//! URIs whose scheme an extension keeps, shown under their server: MCP
//! Apps' `ui://` (`apps`) and Skills' `skill://` (`skills`). Server S's
//! `<scheme><rest>` is shown as `<scheme><S>/<rest>` (S as a URI segment,
//! `names::segment`): the scheme stays, two servers' URIs never collide
//! (a skill's identity is its server and its URI), and the URI routes
//! back by its first segment alone, listed or not. For a skill the
//! segment is one more prefix segment: its last segment is still the
//! skill's name, and no file's bytes change, so every digest holds.
//!
//! A build without either feature scopes nothing: the URIs pass as the
//! servers wrote them.

use mcpx_core::names;

/// The schemes scoped in this build.
#[cfg(any(feature = "apps", feature = "skills"))]
const SCHEMES: &[&str] = &[
    #[cfg(feature = "apps")]
    "ui://",
    #[cfg(feature = "skills")]
    "skill://",
];

/// The scoped scheme `uri` has, if any.
#[cfg(any(feature = "apps", feature = "skills"))]
pub(super) fn scheme(uri: &str) -> Option<&'static str> {
    SCHEMES.iter().copied().find(|s| uri.starts_with(s))
}

/// None is scoped (mcpx-edge's plain build): inlined, every caller folds away.
#[cfg(not(any(feature = "apps", feature = "skills")))]
#[inline(always)]
pub(super) fn scheme(_: &str) -> Option<&'static str> {
    None
}

/// `orig`, a URI of server `server`, as clients see it: `None` when its
/// scheme is not scoped.
#[inline(always)]
pub(super) fn expose(server: &str, orig: &str) -> Option<String> {
    let s = scheme(orig)?;
    Some(format!("{s}{}/{}", names::segment(server).as_str(), &orig[s.len()..]))
}

/// A client's scoped URI: its server segment, and the upstream's URI
/// (`None` when the scheme is not scoped, or no segment follows it).
#[inline(always)]
pub(super) fn split(uri: &str) -> Option<(&str, String)> {
    let s = scheme(uri)?;
    let (seg, rest) = uri[s.len()..].split_once('/')?;
    Some((seg, format!("{s}{rest}")))
}

#[cfg(all(test, feature = "apps", feature = "skills"))]
mod tests {
    use super::*;

    #[test]
    fn scoped_uris_keep_the_scheme_and_route_back_by_their_first_segment() {
        let rows = [
            ("clock", "ui://get-time/mcp-app.html", "ui://clock/get-time/mcp-app.html"),
            ("clock", "ui://dashboard", "ui://clock/dashboard"),
            ("my clock", "ui:///x", "ui://my_clock_27b36fdd//x"),
            ("docs", "skill://git-workflow/SKILL.md", "skill://docs/git-workflow/SKILL.md"),
            ("docs", "skill://acme/billing/refunds/SKILL.md", "skill://docs/acme/billing/refunds/SKILL.md"),
            ("docs", "skill://pdf-processing", "skill://docs/pdf-processing"),
        ];
        for (server, orig, shown) in rows {
            assert_eq!(expose(server, orig).as_deref(), Some(shown), "{orig}");
            assert_eq!(split(shown), Some((names::segment(server).as_str(), orig.to_string())), "{shown}");
        }
        assert_eq!(expose("clock", "file:///x"), None);
        assert_eq!(expose("docs", "github://o/r/skills/x/SKILL.md"), None, "another scheme is the catalog's to name");
        assert_eq!(split("ui://clock"), None, "no server segment");
        assert_eq!(split("skill://docs"), None, "no server segment");
    }
}
