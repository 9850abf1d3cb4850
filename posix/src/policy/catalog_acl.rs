//! Per-principal catalogs: which servers' tools a principal may see and
//! call, layered over the per-server `tools.allow`/`tools.deny` filters
//! (those remove a tool for everyone; this removes it for some).
//!
//! `policy.catalogs` maps a principal (`"stdio"`, a token's name, later an
//! OAuth subject) or `"*"` (everyone not named) to a [`Catalog`]. Patterns
//! are `"server/tool"`, each side a `*` glob over the server's key in
//! `mcpServers` and the tool's original (upstream) name; `"server"` alone
//! means `"server/*"`. Deny wins over allow; an empty allow list allows
//! everything. A principal with no entry and no `"*"` sees every tool.
//!
//! The other primitives a server offers (prompts, resources, resource
//! templates, and so completions and subscriptions on them) follow the
//! server: a principal sees them when some allow pattern names the server
//! (or the allow list is empty) and no deny pattern hides the whole server
//! (`"server"` or `"server/*"`). A catalog that grants one tool of server A
//! so grants nothing of server B.

use mcpx_core::names::glob_match;

/// One `"server/tool"` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub server: String,
    pub tool: String,
}

impl Pattern {
    pub fn parse(s: &str) -> Result<Pattern, String> {
        let (server, tool) = s.split_once('/').unwrap_or((s, "*"));
        if server.is_empty() || tool.is_empty() || tool.contains('/') {
            return Err(format!("{s:?} is not a pattern like \"github/*\", \"github/delete_*\" or \"*/read_*\""));
        }
        Ok(Pattern { server: server.to_string(), tool: tool.to_string() })
    }

    pub fn matches(&self, server: &str, tool: &str) -> bool {
        glob_match(&self.server, server) && glob_match(&self.tool, tool)
    }
}

/// What one principal may see.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalog {
    pub allow: Vec<Pattern>,
    pub deny: Vec<Pattern>,
    /// List the tool-search meta-tools instead of every tool (see
    /// [`super::search`]).
    pub tool_search: bool,
}

impl Catalog {
    pub fn visible(&self, server: &str, tool: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| p.matches(server, tool)))
            && !self.deny.iter().any(|p| p.matches(server, tool))
    }

    /// May this principal see `server`'s prompts, resources and templates?
    pub fn server_visible(&self, server: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| glob_match(&p.server, server)))
            && !self.deny.iter().any(|p| p.tool == "*" && glob_match(&p.server, server))
    }
}

/// `policy.catalogs`, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalogs {
    pub entries: Vec<(String, Catalog)>,
}

impl Catalogs {
    /// The catalog of `principal`: its own entry, else `"*"`, else none
    /// (everything visible).
    pub fn of(&self, principal: &str) -> Option<&Catalog> {
        self.index_of(principal).map(|i| &self.entries[i].1)
    }

    /// Which entry of `entries` applies to `principal`.
    pub fn index_of(&self, principal: &str) -> Option<usize> {
        let find = |name: &str| self.entries.iter().position(|(p, _)| p == name);
        find(principal).or_else(|| find("*"))
    }

    /// May `principal` see (and so call) `tool` of `server`? `tool` is the
    /// upstream's own name. A tool hidden here must be absent from the
    /// principal's lists and answered as unknown when called.
    pub fn visible(&self, principal: &str, server: &str, tool: &str) -> bool {
        self.of(principal).is_none_or(|c| c.visible(server, tool))
    }

    /// May `principal` see `server`'s prompts, resources and templates
    /// ([`Catalog::server_visible`])?
    pub fn server_visible(&self, principal: &str, server: &str) -> bool {
        self.of(principal).is_none_or(|c| c.server_visible(server))
    }

    /// Keeps the items `principal` may see; `key` gives an item's (server,
    /// original tool name).
    pub fn retain_visible<T>(&self, principal: &str, items: &mut Vec<T>, key: impl Fn(&T) -> (&str, &str)) {
        if let Some(c) = self.of(principal) {
            items.retain(|t| {
                let (server, tool) = key(t);
                c.visible(server, tool)
            });
        }
    }

    /// Does `principal` get the tool-search meta-tools instead of the list?
    pub fn tool_search(&self, principal: &str) -> bool {
        self.of(principal).is_some_and(|c| c.tool_search)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(allow: &[&str], deny: &[&str]) -> Catalog {
        Catalog {
            allow: allow.iter().map(|p| Pattern::parse(p).unwrap()).collect(),
            deny: deny.iter().map(|p| Pattern::parse(p).unwrap()).collect(),
            tool_search: false,
        }
    }

    #[test]
    fn patterns() {
        assert_eq!(Pattern::parse("github"), Ok(Pattern { server: "github".into(), tool: "*".into() }));
        assert_eq!(Pattern::parse("*/read_*"), Ok(Pattern { server: "*".into(), tool: "read_*".into() }));
        for bad in ["", "/x", "x/", "a/b/c"] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?} accepted");
        }
        let p = Pattern::parse("fs*/read_*").unwrap();
        assert!(p.matches("fs", "read_file"));
        assert!(p.matches("fs2", "read_"));
        assert!(!p.matches("fs", "write_file"));
        assert!(!p.matches("xfs", "read_file"));
        // Globs are whole-name and case-sensitive.
        assert!(!p.matches("fs", "READ_file"));
        assert!(!Pattern::parse("fs/read").unwrap().matches("fs", "read_file"));
    }

    #[test]
    fn a_servers_prompts_and_resources_follow_the_grant_of_the_server() {
        let cs = Catalogs {
            entries: vec![
                ("alice".into(), cat(&["a/one"], &[])),
                ("bob".into(), cat(&[], &["b", "a/delete_*"])),
                ("carol".into(), cat(&["*/read_*"], &["c/*"])),
            ],
        };
        let table = [
            ("alice", "a", true),
            ("alice", "b", false),
            ("bob", "a", true),
            ("bob", "b", false),
            ("carol", "a", true),
            ("carol", "c", false),
            ("dave", "b", true),
        ];
        for (who, server, want) in table {
            assert_eq!(cs.server_visible(who, server), want, "{who} on {server}");
        }
    }

    #[test]
    fn two_principals_see_different_catalogs() {
        let cs = Catalogs {
            entries: vec![
                ("alice".into(), cat(&["github", "fs/read_*"], &["github/delete_*"])),
                ("*".into(), cat(&["fs/read_file"], &[])),
                ("ops".into(), cat(&[], &["*/delete_*"])),
            ],
        };
        assert!(cs.visible("alice", "github", "create_issue"));
        assert!(!cs.visible("alice", "github", "delete_repo"));
        assert!(cs.visible("alice", "fs", "read_dir"));
        assert!(!cs.visible("alice", "fs", "write_file"));
        // Anyone else falls back to "*".
        assert!(cs.visible("bob", "fs", "read_file"));
        assert!(!cs.visible("bob", "fs", "read_dir"));
        assert!(!cs.visible("bob", "github", "create_issue"));
        // Empty allow: everything but the denied.
        assert!(cs.visible("ops", "github", "create_issue"));
        assert!(!cs.visible("ops", "fs", "delete_file"));

        let mut list = vec![("github", "create_issue"), ("github", "delete_repo"), ("fs", "read_file"), ("fs", "write")];
        let mut for_bob = list.clone();
        cs.retain_visible("alice", &mut list, |t| (t.0, t.1));
        assert_eq!(list, [("github", "create_issue"), ("fs", "read_file")]);
        cs.retain_visible("bob", &mut for_bob, |t| (t.0, t.1));
        assert_eq!(for_bob, [("fs", "read_file")]);
    }

    #[test]
    fn no_catalogs_hide_nothing_and_tool_search_is_per_principal() {
        let none = Catalogs::default();
        assert!(none.visible("anyone", "s", "t"));
        assert!(!none.tool_search("anyone"));
        let mut c = cat(&[], &[]);
        c.tool_search = true;
        let cs = Catalogs { entries: vec![("big".into(), c)] };
        assert!(cs.tool_search("big"));
        assert!(!cs.tool_search("stdio"));
        assert!(cs.visible("stdio", "s", "t"));
    }
}
