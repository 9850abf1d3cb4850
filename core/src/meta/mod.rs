//! Modern (2026-07-28) per-request `_meta` fields and their validation.
//!
//! Every modern client request carries, in `params._meta`
//! (2026-07-28 `RequestMetaObject`, `basic/index` "Per-request protocol
//! fields"):
//!
//! | key | type | required |
//! |---|---|---|
//! | `io.modelcontextprotocol/protocolVersion` | string | yes |
//! | `io.modelcontextprotocol/clientCapabilities` | `ClientCapabilities` (object) | yes |
//! | `io.modelcontextprotocol/clientInfo` | `Implementation` (object) | no |
//! | `io.modelcontextprotocol/logLevel` | `LoggingLevel` (string enum) | no |
//!
//! The schema requires `params._meta` on every client request (all request
//! params extend `RequestParams`, whose `_meta` is required), including
//! `server/discover`. A missing or mistyped required field is -32602 (row
//! `meta-server-rejects-missing-required-field`); a version the server does
//! not support is -32022 with `data.supported` and `data.requested` (row
//! `versioning-server-unsupported-version-error`).

pub mod keys;

pub use keys::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY,
    RELATED_TASK_KEY, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY,
};

use crate::envelope::Envelope;
use crate::error::ErrorCode;
use crate::json::{Duplicate, JsonStr, JsonValue, Kind as JsonKind};
use crate::revision::{Era, Revision, Revisions};
use crate::rewrite::{write_error, write_error_with, Overflow, Writer};

/// The values of `LoggingLevel` (2026-07-28 schema).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The validated per-request `_meta` of a modern request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestMeta<'a> {
    /// The revision requested (supported by the caller's set).
    pub revision: Revision,
    /// `io.modelcontextprotocol/protocolVersion` (a string).
    pub protocol_version: JsonValue<'a>,
    /// `io.modelcontextprotocol/clientCapabilities` (an object).
    pub client_capabilities: JsonValue<'a>,
    /// `io.modelcontextprotocol/clientInfo` (an object), if sent.
    pub client_info: Option<JsonValue<'a>>,
    /// `io.modelcontextprotocol/logLevel` (a `LoggingLevel`), if sent.
    pub log_level: Option<JsonValue<'a>>,
    /// `progressToken`, if sent.
    pub progress_token: Option<JsonValue<'a>>,
}

/// Why a modern request's `_meta` is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaError<'a> {
    /// `params._meta` is absent (-32602).
    MissingMeta,
    /// A required key is absent (-32602).
    Missing(&'static str),
    /// A key has the wrong type or value, or occurs twice (-32602).
    Invalid(&'static str),
    /// The version is not a supported modern revision (-32022). `requested`
    /// is the version string as sent.
    UnsupportedVersion {
        /// The `protocolVersion` string as sent.
        requested: JsonStr<'a>,
    },
}

impl MetaError<'_> {
    /// The error to answer with.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            MetaError::UnsupportedVersion { .. } => ErrorCode::UnsupportedProtocolVersion,
            _ => ErrorCode::InvalidParams,
        }
    }

    /// A concise message for the error response.
    pub fn message(&self) -> &'static str {
        match self {
            MetaError::MissingMeta => "Invalid params: missing _meta",
            MetaError::Missing(PROTOCOL_VERSION_KEY) => {
                "Invalid params: missing _meta io.modelcontextprotocol/protocolVersion"
            }
            MetaError::Missing(_) => {
                "Invalid params: missing _meta io.modelcontextprotocol/clientCapabilities"
            }
            MetaError::Invalid(_) => {
                "Invalid params: malformed io.modelcontextprotocol/* field in _meta"
            }
            MetaError::UnsupportedVersion { .. } => ErrorCode::UnsupportedProtocolVersion.message(),
        }
    }

    /// Writes the error response for the request with id `id`; an
    /// unsupported version lists `supported` in `data` (newest first).
    pub fn write_response(
        &self,
        id: Option<&[u8]>,
        supported: Revisions,
        out: &mut [u8],
    ) -> Result<usize, Overflow> {
        match self {
            MetaError::UnsupportedVersion { requested } => {
                write_unsupported_version_error(id, requested, supported, out)
            }
            _ => write_error(
                id,
                self.error_code().code().into(),
                self.message(),
                None,
                out,
            ),
        }
    }
}

fn field<'a>(
    meta: &JsonValue<'a>,
    key: &'static str,
    kind: JsonKind,
) -> Result<Option<JsonValue<'a>>, MetaError<'a>> {
    match meta.get_unique(key) {
        Ok(Some(v)) if v.kind() == kind => Ok(Some(v)),
        Ok(None) => Ok(None),
        Ok(Some(_)) | Err(Duplicate) => Err(MetaError::Invalid(key)),
    }
}

fn required<'a>(
    meta: &JsonValue<'a>,
    key: &'static str,
    kind: JsonKind,
) -> Result<JsonValue<'a>, MetaError<'a>> {
    field(meta, key, kind)?.ok_or(MetaError::Missing(key))
}

/// Validates the per-request `_meta` of a modern request against the
/// revisions the server `supported` (only modern members count).
pub fn validate_request_meta<'a>(
    msg: &Envelope<'a>,
    supported: Revisions,
) -> Result<RequestMeta<'a>, MetaError<'a>> {
    let meta = msg.meta().ok_or(MetaError::MissingMeta)?;
    let protocol_version = required(&meta, PROTOCOL_VERSION_KEY, JsonKind::String)?;
    let client_capabilities = required(&meta, CLIENT_CAPABILITIES_KEY, JsonKind::Object)?;
    let client_info = field(&meta, CLIENT_INFO_KEY, JsonKind::Object)?;
    let log_level = field(&meta, LOG_LEVEL_KEY, JsonKind::String)?;
    let level_ok = |v: &JsonValue<'_>| {
        v.as_str()
            .is_some_and(|s| LOG_LEVELS.iter().any(|l| s.eq_str(l)))
    };
    if log_level.is_some_and(|v| !level_ok(&v)) {
        return Err(MetaError::Invalid(LOG_LEVEL_KEY));
    }
    let requested = protocol_version
        .as_str()
        .ok_or(MetaError::Invalid(PROTOCOL_VERSION_KEY))?;
    let revision = Revision::ALL
        .into_iter()
        .find(|r| r.era() == Era::Modern && supported.contains(*r) && requested.eq_str(r.as_str()))
        .ok_or(MetaError::UnsupportedVersion { requested })?;
    Ok(RequestMeta {
        revision,
        protocol_version,
        client_capabilities,
        client_info,
        log_level,
        progress_token: msg.progress_token(),
    })
}

fn unsupported_data(w: &mut Writer<'_>, requested: &JsonStr<'_>, supported: Revisions) {
    w.raw(b"{\"supported\":[");
    for (i, r) in supported.iter().rev().enumerate() {
        if i > 0 {
            w.raw(b",");
        }
        w.string(&[r.as_str()]);
    }
    w.raw(b"],\"requested\":\"");
    w.raw(requested.raw());
    w.raw(b"\"}");
}

/// Writes the `data` of an `UnsupportedProtocolVersionError`:
/// `{"supported":[..newest first..],"requested":"<as sent>"}`.
pub fn write_unsupported_version_data(
    requested: &JsonStr<'_>,
    supported: Revisions,
    out: &mut [u8],
) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    unsupported_data(&mut w, requested, supported);
    w.finish()
}

/// Writes a complete -32022 error response echoing `id`. `supported` should
/// list every version the server accepts, legacy ones included.
pub fn write_unsupported_version_error(
    id: Option<&[u8]>,
    requested: &JsonStr<'_>,
    supported: Revisions,
    out: &mut [u8],
) -> Result<usize, Overflow> {
    let code = ErrorCode::UnsupportedProtocolVersion;
    write_error_with(id, code.code().into(), code.message(), out, |w| {
        unsupported_data(w, requested, supported);
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(meta: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{{"_meta":{meta}}}}}"#)
    }

    const OK_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info","progressToken":7}"#;

    #[test]
    fn valid_meta() {
        let s = req(OK_META);
        let m = Envelope::parse(s.as_bytes()).unwrap();
        let rm = validate_request_meta(&m, Revisions::ALL).unwrap();
        assert_eq!(rm.revision, Revision::V2026_07_28);
        assert_eq!(rm.client_capabilities.bytes(), b"{}");
        assert_eq!(rm.client_info.unwrap().kind(), JsonKind::Object);
        assert_eq!(rm.log_level.unwrap().bytes(), b"\"info\"");
        assert_eq!(rm.progress_token.unwrap().bytes(), b"7");
        let minimal = req(
            r#"{"io.modelcontextprotocol/clientCapabilities":{"x":1},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
        );
        let rm = validate_request_meta(
            &Envelope::parse(minimal.as_bytes()).unwrap(),
            Revisions::ALL,
        )
        .unwrap();
        assert!(rm.client_info.is_none() && rm.log_level.is_none());
    }

    // covers: meta-server-rejects-missing-required-field, meta-request-params-meta-required
    #[test]
    fn invalid_meta() {
        let no_meta = r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}"#;
        let m = Envelope::parse(no_meta.as_bytes()).unwrap();
        assert_eq!(
            validate_request_meta(&m, Revisions::ALL),
            Err(MetaError::MissingMeta)
        );
        let cases: &[(&str, MetaError<'static>)] = &[
            (
                r#"{"io.modelcontextprotocol/clientCapabilities":{}}"#,
                MetaError::Missing(PROTOCOL_VERSION_KEY),
            ),
            (
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
                MetaError::Missing(CLIENT_CAPABILITIES_KEY),
            ),
            (
                r#"{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}"#,
                MetaError::Invalid(PROTOCOL_VERSION_KEY),
            ),
            (
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
                MetaError::Invalid(CLIENT_CAPABILITIES_KEY),
            ),
            (
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}"#,
                MetaError::Invalid(LOG_LEVEL_KEY),
            ),
            (
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
                MetaError::Invalid(PROTOCOL_VERSION_KEY),
            ),
        ];
        for (meta, want) in cases {
            let s = req(meta);
            let m = Envelope::parse(s.as_bytes()).unwrap();
            let got = validate_request_meta(&m, Revisions::ALL).unwrap_err();
            assert_eq!(got, *want, "{meta}");
            assert_eq!(got.error_code().code(), -32602);
            assert!(got.message().starts_with("Invalid params"));
        }
    }

    // covers: versioning-server-unsupported-version-error
    #[test]
    fn unsupported_version() {
        for (v, supported) in [
            ("1900-01-01", Revisions::ALL),
            ("2025-11-25", Revisions::ALL),
            ("2026-07-28", Revisions::LEGACY),
        ] {
            let s = req(&format!(
                r#"{{"io.modelcontextprotocol/protocolVersion":"{v}","io.modelcontextprotocol/clientCapabilities":{{}}}}"#
            ));
            let m = Envelope::parse(s.as_bytes()).unwrap();
            let err = validate_request_meta(&m, supported).unwrap_err();
            let MetaError::UnsupportedVersion { requested } = err else {
                panic!("{err:?}")
            };
            assert!(requested.eq_str(v));
            assert_eq!(err.error_code().code(), -32022);
            let mut out = [0u8; 256];
            let n = write_unsupported_version_error(m.id_bytes(), &requested, supported, &mut out)
                .unwrap();
            let j: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
            assert_eq!(j["id"], 9);
            assert_eq!(j["error"]["code"], -32022);
            assert_eq!(j["error"]["data"]["requested"], v);
            let want: Vec<_> = supported.iter().rev().map(|r| r.as_str()).collect();
            assert_eq!(j["error"]["data"]["supported"], serde_json::json!(want));
            let n = write_unsupported_version_data(&requested, supported, &mut out).unwrap();
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&out[..n]).unwrap(),
                j["error"]["data"]
            );
            assert!(
                matches!(write_unsupported_version_data(&requested, supported, &mut out[..5]), Err(Overflow { needed }) if needed == n)
            );
        }
    }
}
