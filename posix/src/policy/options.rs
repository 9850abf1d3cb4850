//! The options of [`crate::policy`] as the hub takes them. `crate::config`
//! maps the `"policy"` block of the config file into them.

use std::path::PathBuf;

/// `"policy"`:
/// `{"rateLimits": {..} | false, "catalogs": {PRINCIPAL: {..}},
/// "validate": {..}, "audit": {..}, "metrics": true,
/// "untrustedAnnotations": "mark" | "remove", "pin": ..}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    pub rate_limits: super::ratelimit::RateLimitConfig,
    pub catalogs: super::catalog_acl::Catalogs,
    /// `None`: no validation.
    pub validate: Option<ValidateSettings>,
    /// `None`: no audit log.
    pub audit: Option<AuditSettings>,
    /// Serve `/metrics` (default true).
    pub metrics: bool,
    /// What the tool annotations of servers not `"trusted"` get.
    pub untrusted_annotations: UntrustedAnnotations,
    /// `"approve"` and `"approvals"`: the calls a person approves first.
    pub approvals: super::approval::ApprovalConfig,
    /// `None`: tool definitions are not pinned.
    pub pin: Option<PinSettings>,
}

/// `policy.untrustedAnnotations` (requirement tools-annotations-untrusted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UntrustedAnnotations {
    /// Kept, with the server's name under `_meta["io.github.mcpx/provenance"]`.
    #[default]
    Mark,
    /// Removed from the tools listed.
    Remove,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            rate_limits: Default::default(),
            catalogs: Default::default(),
            validate: None,
            audit: None,
            metrics: true,
            untrusted_annotations: UntrustedAnnotations::Mark,
            approvals: Default::default(),
            pin: None,
        }
    }
}

/// `"validate": {"servers": ["*"], "arguments": true, "elicitation": true,
/// "output": "log"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidateSettings {
    /// Server-name globs whose tools are validated.
    pub servers: Vec<String>,
    pub arguments: bool,
    pub elicitation: bool,
    pub output: OutputCheck,
}

/// What a `structuredContent` that breaks its `outputSchema` gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputCheck {
    Off,
    /// Passed on, and a warning logged.
    Log,
    /// Replaced by a tool error naming the violation.
    Refuse,
}

/// `"audit": {"file": "~/mcpx-audit.jsonl" | "stderr", "maxBytes": n,
/// "files": n, "arguments": false, "redact": [..], "queue": n}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditSettings {
    /// `None`: standard error.
    pub file: Option<PathBuf>,
    pub max_bytes: u64,
    pub files: u32,
    pub content: super::audit::Content,
    pub queue: usize,
}

/// `"pin": "warn" | "hide" | {"mode", "findings", "lockFile"}`: the
/// definitions of tools, prompts and resource templates are pinned (trusted
/// on first use, or from a lock file), and what changes is quarantined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinSettings {
    /// What a changed (or new, or renamed) definition gets.
    pub mode: Quarantine,
    /// What a definition with inspection findings gets (default: `mode`).
    pub findings: Quarantine,
    /// Only the pins in this file are trusted (none on first use).
    pub lock_file: Option<PathBuf>,
}

/// What a quarantined definition gets until it is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quarantine {
    /// Listed and callable; logged, counted and shown on `/status`.
    Warn,
    /// Listed; each call of a changed tool waits for a person's approval,
    /// as one a `policy.approve` rule covers (`hub::approvals`).
    Approve,
    /// Absent from every list and answered as unknown.
    Hide,
}
