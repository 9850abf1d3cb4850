//! [`Policy`]: every part of the policy a hub holds, built from the
//! `"policy"` config in one place.

use std::io;

use mcpx_core::names::glob_match;

use super::audit::{self, Writer};
use super::catalog_acl::Catalogs;
use super::metrics::HubMetrics;
use super::ratelimit::RateLimiter;
use super::{PolicyConfig, ValidateSettings};

/// Series per metric family (servers × methods × outcomes stay far below).
const MAX_SERIES: usize = 2048;

/// The policy state of one hub (see the module doc of [`super`] for where
/// the hub calls each part).
pub struct Policy {
    pub limiter: RateLimiter,
    pub catalogs: Catalogs,
    /// With `validate` configured.
    pub validate: Option<ValidateSettings>,
    #[cfg(feature = "validate")]
    pub validators: super::validate::Validators,
    /// The writer and what goes into lines, with `audit` configured.
    pub audit: Option<(Writer, audit::Content)>,
    /// Unless `"metrics": false`.
    pub metrics: Option<HubMetrics>,
    /// Who calls what, a family of [`Policy::metrics`].
    #[cfg(feature = "activity")]
    pub callers: Option<super::callers::Callers>,
}

impl Policy {
    /// Opens the audit file (the only I/O here) and starts its writer.
    pub fn new(cfg: &PolicyConfig) -> io::Result<Policy> {
        let audit = match &cfg.audit {
            None => None,
            Some(a) => {
                let writer = match &a.file {
                    None => Writer::spawn(audit::Stderr, a.queue)?,
                    Some(path) => Writer::spawn(audit::Rotating::open(path, a.max_bytes, a.files)?, a.queue)?,
                };
                Some((writer, a.content.clone()))
            }
        };
        #[cfg_attr(not(feature = "activity"), allow(unused_mut))] // the callers' family is added to it
        let mut metrics = cfg.metrics.then(|| HubMetrics::new(MAX_SERIES));
        Ok(Policy {
            limiter: RateLimiter::new(cfg.rate_limits.clone()),
            catalogs: cfg.catalogs.clone(),
            validate: cfg.validate.clone(),
            #[cfg(feature = "validate")]
            validators: super::validate::Validators::new(Default::default()),
            audit,
            #[cfg(feature = "activity")]
            callers: metrics.as_mut().map(|m| super::callers::Callers::register(&mut m.registry)),
            metrics,
        })
    }

    /// Are `server`'s tools validated (`validate.servers` globs)?
    pub fn validates(&self, server: &str) -> bool {
        self.validate.as_ref().is_some_and(|v| v.servers.iter().any(|g| glob_match(g, server)))
    }

    /// Writes `record`'s line when auditing (never blocks) and counts it in
    /// the metrics' dropped lines when the queue was full.
    pub fn audit(&mut self, record: &audit::Record<'_>) {
        let Some((writer, content)) = &self.audit else { return };
        writer.push(record.line(content));
        if let Some(m) = &mut self.metrics {
            m.audit_dropped(writer.dropped());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AuditSettings;
    use crate::policy::ratelimit::{Class, Key};

    #[test]
    fn built_from_the_config() {
        let dir = std::env::temp_dir().join(format!("mcpx-policy-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        let cfg = PolicyConfig {
            validate: Some(ValidateSettings { servers: vec!["git*".into(), "gh".into()], arguments: true, elicitation: true, output: crate::policy::OutputCheck::Log }),
            audit: Some(AuditSettings { file: Some(path.clone()), max_bytes: 1 << 20, files: 2, content: Default::default(), queue: 16 }),
            ..PolicyConfig::default()
        };
        let mut p = Policy::new(&cfg).unwrap();
        assert!(p.validates("github") && p.validates("gh") && !p.validates("fs") && !p.validates("ghx"));
        let key = Key { class: Class::ToolCall, principal: "stdio", server: "gh", tool: "gh__x" };
        assert!((0..100).all(|_| p.limiter.check(key, 0).is_ok()));
        assert!(p.limiter.check(key, 0).is_err(), "the default 100/s per principal");
        let record = audit::Record {
            time_ms: 0,
            method: "tools/call",
            principal: "stdio",
            client_revision: "2025-06-18",
            server: "gh",
            name: "gh__x",
            original_name: "x",
            arguments: Some(b"{}"),
            stage: None,
            approval: None,
            #[cfg(feature = "secrets")]
            upstream_identity: None,
            outcome: audit::Outcome::Result,
            duration_ms: 1,
            bytes_in: 2,
            bytes_out: 3,
        };
        p.audit(&record);
        drop(p);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, record.line(&Default::default()));
        let _ = std::fs::remove_dir_all(&dir);
        // Off when not configured.
        let p = Policy::new(&PolicyConfig { metrics: false, ..PolicyConfig::default() }).unwrap();
        assert!(p.audit.is_none() && p.metrics.is_none() && !p.validates("gh"));
    }
}
