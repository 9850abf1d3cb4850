//! Approvals (issue "Consent at the hub"): which tool calls a person must
//! approve before they run, and what that person is shown.
//!
//! `policy.approve` lists rules, first match wins: a string is a
//! `"server/tool"` pattern ([`Pattern`], the catalogs' syntax); an object
//! adds who asks (`principals`, globs), a tool annotation that requires
//! approval (`annotations`: `"destructiveHint"`, `"openWorldHint"`), who
//! approves (`via`, first available wins) and how long an approval covers
//! the same call again (`rememberMs`, 0: once). Annotations are untrusted
//! (requirement tools-annotations-untrusted): they can only bring a tool
//! under a rule, never take one out of a pattern's.
//!
//! An approval is bound to the exact call: principal, server, tool and
//! [`args_digest`], the SHA-256 of its arguments in a canonical form.

use mcpx_core::names::glob_match;
use serde_json::Value;

use super::catalog_acl::Pattern;
use crate::bytes::canonical::canonical;
use crate::bytes::hex::hex;

/// Who may approve a call, in a rule's order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The calling client's user, through an elicitation (a legacy client
    /// that declared `elicitation`).
    Client,
    /// An approver on the HTTP listener's `/approvals` page (or the
    /// one-time link a notification carries).
    Page,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Client => "client",
            Via::Page => "page",
        }
    }
}

/// One rule of `policy.approve`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The calls it covers (any pattern); empty with `annotations`: any tool.
    pub tools: Vec<Pattern>,
    /// Tool annotations that bring a tool under the rule when the tool does
    /// not set them to `false` (both default to true in the specification).
    pub annotations: Vec<String>,
    /// Principals it covers (globs); empty: everyone.
    pub principals: Vec<String>,
    pub via: Vec<Via>,
    /// How long an approval covers the same call (same principal, tool and
    /// arguments) again; 0: it is used once.
    pub remember_ms: u64,
}

/// A rule's defaults: for every principal, approved once, by the client's
/// user or on the page; it names no tool yet.
impl Default for Rule {
    fn default() -> Rule {
        Rule { tools: Vec::new(), annotations: Vec::new(), principals: Vec::new(), via: vec![Via::Client, Via::Page], remember_ms: 0 }
    }
}

impl Rule {
    /// A rule from a bare pattern, with the defaults.
    pub fn pattern(p: Pattern) -> Rule {
        Rule { tools: vec![p], ..Rule::default() }
    }

    /// Does this rule cover `principal` calling `server`'s tool `tool`,
    /// listed as `def` (looked up only when an annotation decides)?
    pub fn covers<'d>(&self, principal: &str, server: &str, tool: &str, def: impl FnOnce() -> Option<&'d Value>) -> bool {
        if !self.principals.is_empty() && !self.principals.iter().any(|p| glob_match(p, principal))
        {
            return false;
        }
        let named = self.tools.iter().any(|p| p.matches(server, tool));
        if self.annotations.is_empty() {
            return named;
        }
        let in_scope = self.tools.is_empty() || named;
        in_scope && def().is_some_and(|def| self.annotations.iter().any(|a| def.get("annotations").and_then(|x| x.get(a)) != Some(&Value::Bool(false))))
    }
}

/// `policy.approve` and `policy.approvals`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalConfig {
    pub rules: Vec<Rule>,
    /// How long a call waits for a decision before it is answered as
    /// not approved.
    pub timeout_ms: u64,
    /// Principals that may see and decide every pending call on the page
    /// (a principal always may decide its own calls there).
    pub approvers: Vec<String>,
    /// Calls waiting at once, in all; a principal holds at most an eighth.
    pub max_waiting: usize,
    /// Told of each call waiting for the page, with its one-time link.
    pub notify: Option<Notify>,
}

/// Where a call waiting for the page is announced, with its one-time
/// link (`policy.approvals.notify`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notify {
    pub carrier: Carrier,
    /// The URL an approver's browser reaches the hub's listener at
    /// (`linkBase`, no trailing slash): the link sent is this and the
    /// path; `None`: the path only.
    pub link_base: Option<String>,
}

/// How a [`Notice`] is carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// `command`: run with the notice in `MCPX_APPROVAL_*` environment
    /// variables, e.g. a script that posts to ntfy or a chat webhook.
    Command(Vec<String>),
    /// `url`: an HTTP POST of the notice.
    Post(Post),
}

/// `{"url", "format", "headers"}`: where and how the notice is posted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Post {
    /// An absolute http(s) URL without user info (checked by the config).
    pub url: String,
    pub format: Format,
    /// Sent with the POST (`Authorization`, ntfy's `Priority`), `${VAR}`
    /// already expanded; one named like a header of the format's replaces it.
    pub headers: Vec<(String, String)>,
}

/// What the POST's body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// `application/json`: the notice's fields, its text under `text`
    /// (what Slack and Mattermost incoming webhooks show).
    #[default]
    Json,
    /// ntfy's publish format: the text as a plain-text body, the title in
    /// `Title`, the link (when absolute) in `Click`.
    Ntfy,
}

/// What a notification says of one waiting call: built once by the hub,
/// carried as environment variables or a POST body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The call's number on the page.
    pub id: u64,
    /// The one-time link's path and query, `/approvals/N?key=..`.
    pub path: String,
    /// The link to send: `linkBase` and the path, or the path alone.
    pub link: String,
    pub server: String,
    pub tool: String,
    pub principal: String,
    /// SHA-256 of the exact arguments, hex.
    pub sha256: String,
    /// The arguments as an approver sees them ([`shown_args`]).
    pub arguments: String,
    /// One line: who asks to run what.
    pub title: String,
    /// The title, the arguments and the link, at most [`NOTICE_TEXT`]
    /// bytes (the arguments cut first; the link never).
    pub text: String,
}

/// The longest [`Notice::text`], in bytes: under ntfy's message limit
/// (4096 bytes; a longer body becomes an attachment).
pub const NOTICE_TEXT: usize = 4000;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const DEFAULT_MAX_WAITING: usize = 256;

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            rules: Vec::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            approvers: Vec::new(),
            max_waiting: DEFAULT_MAX_WAITING,
            notify: None,
        }
    }
}

impl ApprovalConfig {
    /// The rule covering this call, if one does.
    pub fn rule_for<'d>(
        &self,
        principal: &str,
        server: &str,
        tool: &str,
        def: impl Fn() -> Option<&'d Value>,
    ) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.covers(principal, server, tool, &def))
    }

    /// May `principal` decide calls of other principals?
    pub fn is_approver(&self, principal: &str) -> bool {
        self.approvers.iter().any(|p| glob_match(p, principal))
    }
}

/// The SHA-256 of a call's arguments in canonical form (object keys
/// sorted at every level, no whitespace): the same arguments written
/// differently have the same digest, different ones never.
pub fn args_digest(args: &Value) -> [u8; 32] {
    mcpx_core::request_state::digest(&canonical(args))
}

/// Strings longer than this are shown cut, with the length and digest of
/// the whole.
pub const SHOWN_STRING: usize = 200;
/// The arguments as shown are at most this many characters.
pub const SHOWN_TOTAL: usize = 4000;

/// The arguments as an approver sees them: pretty-printed, each long
/// string cut with the length and digest of the whole, and the whole text
/// at most [`SHOWN_TOTAL`] characters (then cut, and saying so). The
/// digest of the exact arguments is shown beside it by the caller.
pub fn shown_args(args: &Value) -> String {
    let text = serde_json::to_string_pretty(&cut_strings(args)).unwrap_or_default();
    if text.chars().count() <= SHOWN_TOTAL {
        return text;
    }
    let mut s: String = text.chars().take(SHOWN_TOTAL).collect();
    s.push_str("\n… (cut: the arguments are longer; their digest is below)");
    s
}

fn cut_strings(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > SHOWN_STRING => {
            let head: String = s.chars().take(SHOWN_STRING).collect();
            let d = hex(&mcpx_core::request_state::digest(s.as_bytes()));
            Value::String(format!(
                "{head}… ({} characters in all, sha256 {})",
                s.chars().count(),
                &d[..16]
            ))
        }
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), cut_strings(x))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(cut_strings).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> Rule {
        let tools = v["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|p| Pattern::parse(p.as_str().unwrap()).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        let strings = |k: &str| {
            v[k].as_array()
                .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default()
        };
        Rule {
            tools,
            annotations: strings("annotations"),
            principals: strings("principals"),
            via: vec![Via::Page],
            remember_ms: 0,
        }
    }

    #[test]
    fn a_rule_covers_calls_by_pattern_principal_and_annotation() {
        let plain = json!({ "name": "x" });
        let destructive = json!({ "name": "x", "annotations": { "destructiveHint": true } });
        let says_harmless = json!({ "name": "x", "annotations": { "destructiveHint": false } });
        // (rule, principal, server, tool, definition, covered)
        let table = [
            (json!({ "tools": ["*/delete_*"] }), "alice", "files", "delete_file", &plain, true),
            (json!({ "tools": ["*/delete_*"] }), "alice", "files", "read_file", &plain, false),
            // A pattern's rule holds whatever the tool says of itself.
            (json!({ "tools": ["files/*"] }), "alice", "files", "read_file", &says_harmless, true),
            (json!({ "tools": ["files/*"], "principals": ["bot-*"] }), "alice", "files", "read_file", &plain, false),
            (json!({ "tools": ["files/*"], "principals": ["bot-*"] }), "bot-7", "files", "read_file", &plain, true),
            // An annotation rule: the spec's default (absent) is true.
            (json!({ "annotations": ["destructiveHint"] }), "alice", "any", "x", &plain, true),
            (json!({ "annotations": ["destructiveHint"] }), "alice", "any", "x", &destructive, true),
            (json!({ "annotations": ["destructiveHint"] }), "alice", "any", "x", &says_harmless, false),
            (json!({ "tools": ["files/*"], "annotations": ["destructiveHint"] }), "alice", "web", "x", &destructive, false),
        ];
        for (r, principal, server, tool, def, want) in table {
            assert_eq!(
                rule(r.clone()).covers(principal, server, tool, || Some(def)),
                want,
                "{r} {principal} {server}/{tool} {def}"
            );
        }
    }

    #[test]
    fn the_digest_is_of_the_arguments_not_their_spelling() {
        let a = args_digest(&json!({ "path": "/tmp/a", "opts": { "force": true, "depth": 2 } }));
        let b = args_digest(
            &serde_json::from_str(r#"{"opts":{"depth":2,"force":true},"path":"/tmp/a"}"#).unwrap(),
        );
        assert_eq!(a, b);
        assert_ne!(
            a,
            args_digest(&json!({ "path": "/tmp/b", "opts": { "force": true, "depth": 2 } }))
        );
        assert_ne!(
            args_digest(&json!({ "n": 1 })),
            args_digest(&json!({ "n": "1" }))
        );
        assert_ne!(args_digest(&json!([1, 2])), args_digest(&json!([2, 1])));
    }

    #[test]
    fn long_arguments_are_shown_cut_with_the_digest_of_the_whole() {
        let long = "x".repeat(1000);
        let shown = shown_args(&json!({ "content": long, "path": "/a" }));
        assert!(shown.contains("\"path\": \"/a\""), "{shown}");
        let d = hex(&mcpx_core::request_state::digest(long.as_bytes()));
        assert!(
            shown.contains(&format!("(1000 characters in all, sha256 {})", &d[..16])),
            "{shown}"
        );
        assert!(shown.len() < 400, "{shown}");
        let many: Vec<String> = (0..400).map(|i| format!("item {i}")).collect();
        let shown = shown_args(&json!({ "list": many }));
        assert!(shown.ends_with("their digest is below)"), "{shown}");
    }
}
