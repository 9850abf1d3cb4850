//! JSON-RPC error codes used by MCP, as one table: value, schema name,
//! default message, the revisions in which each may be emitted, and what to
//! emit instead elsewhere.

use crate::revision::{Revision, Revisions};

/// An error code defined by JSON-RPC 2.0 or by some MCP revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// -32700: the message is not JSON.
    ParseError,
    /// -32600: JSON, but not a valid JSON-RPC/MCP message.
    InvalidRequest,
    /// -32601: unknown method, or one gated behind an unadvertised capability.
    MethodNotFound,
    /// -32602: invalid parameters (also: missing required `_meta` fields in
    /// 2026-07-28, unknown resource from 2026-07-28 on).
    InvalidParams,
    /// -32603: internal error.
    InternalError,
    /// -32002: resource not found (2025-11-25 and earlier).
    ResourceNotFound,
    /// -32042: URL elicitation required (2025-11-25 only).
    UrlElicitationRequired,
    /// -32020: HTTP headers missing, malformed or not matching the body
    /// (`HeaderMismatchError`, 2026-07-28).
    HeaderMismatch,
    /// -32021: the request needs a client capability that was not declared
    /// (`MissingRequiredClientCapabilityError`, 2026-07-28).
    MissingRequiredClientCapability,
    /// -32022: the request's protocol version is not supported
    /// (`UnsupportedProtocolVersionError`, 2026-07-28).
    UnsupportedProtocolVersion,
}

/// One row of the error table.
struct Row {
    code: i32,
    name: &'static str,
    message: &'static str,
    revisions: Revisions,
    instead: ErrorCode,
    /// Emitted only to a peer that declared URL-mode elicitation, else
    /// `instead`.
    needs_url_elicitation: bool,
    /// HTTP status of a modern (2026-07-28) response carrying this error.
    http_status: u16,
}

/// The capabilities of the receiving peer that some codes depend on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerCaps {
    /// The peer declared `capabilities.elicitation.url`.
    pub url_elicitation: bool,
}

impl ErrorCode {
    /// Every code in the table.
    pub const ALL: [ErrorCode; 10] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::ResourceNotFound,
        ErrorCode::UrlElicitationRequired,
        ErrorCode::HeaderMismatch,
        ErrorCode::MissingRequiredClientCapability,
        ErrorCode::UnsupportedProtocolVersion,
    ];

    /// The table. `instead` is the code to emit in revisions outside
    /// `revisions` (unused for codes valid everywhere).
    const fn row(self) -> Row {
        use ErrorCode::*;
        use Revision::*;
        const fn r(
            code: i32,
            name: &'static str,
            message: &'static str,
            revisions: Revisions,
            instead: ErrorCode,
        ) -> Row {
            Row {
                code,
                name,
                message,
                revisions,
                instead,
                needs_url_elicitation: false,
                http_status: 200,
            }
        }
        // 2026-07-28 transports/streamable-http: the spec's own errors and
        // malformed requests are 400, an unknown method 404.
        const fn status(row: Row, http_status: u16) -> Row {
            Row { http_status, ..row }
        }
        match self {
            ParseError => status(
                r(
                -32700,
                "ParseError",
                "Parse error",
                Revisions::ALL,
                ParseError,
                ),
                400,
            ),
            InvalidRequest => status(
                r(
                -32600,
                "InvalidRequestError",
                "Invalid request",
                Revisions::ALL,
                InvalidRequest,
                ),
                400,
            ),
            MethodNotFound => status(
                r(
                -32601,
                "MethodNotFoundError",
                "Method not found",
                Revisions::ALL,
                MethodNotFound,
                ),
                404,
            ),
            InvalidParams => status(
                r(
                -32602,
                "InvalidParamsError",
                "Invalid params",
                Revisions::ALL,
                InvalidParams,
                ),
                400,
            ),
            InternalError => r(
                -32603,
                "InternalError",
                "Internal error",
                Revisions::ALL,
                InternalError,
            ),
            // 2026-07-28 basic/index "Error Codes": replaced by -32602.
            ResourceNotFound => r(
                -32002,
                "ResourceNotFound",
                "Resource not found",
                Revisions::LEGACY,
                InvalidParams,
            ),
            // `URLElicitationRequiredError` exists in the 2025-11-25 schema only;
            // other revisions cannot express it as an error.
            // Row elicitation-server-may-return-url-required-error: only to a
            // client that declared URL mode.
            UrlElicitationRequired => Row {
                needs_url_elicitation: true,
                ..r(
                    -32042,
                    "URLElicitationRequiredError",
                    "URL elicitation required",
                    Revisions::only(V2025_11_25),
                    InternalError,
                )
            },
            HeaderMismatch => status(
                r(
                -32020,
                "HeaderMismatchError",
                "Header mismatch",
                Revisions::MODERN,
                InvalidRequest,
                ),
                400,
            ),
            MissingRequiredClientCapability => status(
                r(
                -32021,
                "MissingRequiredClientCapabilityError",
                "Missing required client capability",
                Revisions::MODERN,
                InvalidRequest,
                ),
                400,
            ),
            // Legacy revisions answer an unsupported version with -32602
            // (lifecycle "Error Handling" example).
            UnsupportedProtocolVersion => status(
                r(
                -32022,
                "UnsupportedProtocolVersionError",
                "Unsupported protocol version",
                Revisions::MODERN,
                InvalidParams,
                ),
                400,
            ),
        }
    }

    /// The integer code.
    pub const fn code(self) -> i32 {
        self.row().code
    }

    /// The schema definition name (or spec name) of the error.
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// A concise default message (row `errors-message-concise-single-sentence`).
    pub const fn message(self) -> &'static str {
        self.row().message
    }

    /// The revisions in which this code may be emitted.
    pub const fn revisions(self) -> Revisions {
        self.row().revisions
    }

    /// HTTP status of a modern (2026-07-28) response carrying this error.
    pub const fn http_status(self) -> u16 {
        self.row().http_status
    }

    /// The table entry for an integer code.
    pub fn from_code(code: i64) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|c| i64::from(c.code()) == code)
    }

    /// Whether this code may be emitted to a peer speaking `rev`.
    pub const fn may_emit(self, rev: Revision) -> bool {
        self.revisions().contains(rev)
    }

    /// This code if it may be emitted in `rev`, else the code to use instead.
    pub const fn for_revision(self, rev: Revision) -> ErrorCode {
        if self.may_emit(rev) {
            self
        } else {
            self.row().instead
        }
    }

    /// The code to send a peer speaking `rev` with capabilities `caps`: this
    /// one if the revision has it and the peer declared what it needs, else
    /// the table's replacement. The typed form of [`code_for`].
    pub const fn for_peer(self, rev: Revision, caps: PeerCaps) -> ErrorCode {
        if self.row().needs_url_elicitation && !caps.url_elicitation {
            self.row().instead
        } else {
            self.for_revision(rev)
        }
    }
}

/// -32000..=-32019: legacy implementation-defined sub-range.
const LEGACY_SUBRANGE: core::ops::RangeInclusive<i64> = -32019..=-32000;
/// -32020..=-32099: reserved for codes defined by the MCP specification.
const RESERVED_SUBRANGE: core::ops::RangeInclusive<i64> = -32099..=-32020;

/// Whether `code` may be emitted to a peer speaking `rev`.
///
/// Table codes follow [`ErrorCode::revisions`]. Other codes are free in
/// legacy revisions; in 2026-07-28 undefined codes of the reserved sub-range
/// must not be emitted (row `errors-reserved-subrange-only-spec-codes`) and
/// the legacy sub-range should not be used (row
/// `errors-legacy-subrange-no-new-codes`), so both are refused.
pub fn may_emit(code: i64, rev: Revision) -> bool {
    match ErrorCode::from_code(code) {
        Some(c) => c.may_emit(rev),
        None => {
            rev.era() == crate::revision::Era::Legacy
                || !(LEGACY_SUBRANGE.contains(&code) || RESERVED_SUBRANGE.contains(&code))
        }
    }
}

/// The code to send a peer speaking `rev` with capabilities `caps`: `code`
/// if [`may_emit`] allows it and the peer declared what it needs, else the
/// table's replacement (-32603 for other refused codes). Applied once, at
/// egress, to every error answered to a client.
pub fn code_for(code: i64, rev: Revision, caps: PeerCaps) -> i64 {
    match ErrorCode::from_code(code) {
        Some(c) => i64::from(c.for_peer(rev, caps).code()),
        None if may_emit(code, rev) => code,
        None => i64::from(ErrorCode::InternalError.code()),
    }
}

/// HTTP status of a modern (2026-07-28) response carrying error `code`: the
/// table's, 200 for codes outside it.
pub fn http_status(code: i64) -> u16 {
    ErrorCode::from_code(code).map_or(200, ErrorCode::http_status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Revision::*;

    const NONE: PeerCaps = PeerCaps { url_elicitation: false };
    const URL: PeerCaps = PeerCaps { url_elicitation: true };

    // covers: errors-standard-jsonrpc-codes
    #[test]
    fn standard_codes_everywhere() {
        for c in [-32700, -32600, -32601, -32602, -32603] {
            let e = ErrorCode::from_code(c).unwrap();
            assert_eq!(i64::from(e.code()), c);
            for r in Revision::ALL {
                assert!(may_emit(c, r));
                assert_eq!(code_for(c, r, PeerCaps::default()), c);
            }
        }
    }

    // covers: errors-do-not-emit-32002-and-32042
    #[test]
    fn legacy_only_codes() {
        assert!(may_emit(-32002, V2025_11_25));
        assert!(may_emit(-32002, V2024_11_05));
        assert!(!may_emit(-32002, V2026_07_28));
        assert_eq!(code_for(-32002, V2026_07_28, NONE), -32602);
        assert!(may_emit(-32042, V2025_11_25));
        assert!(!may_emit(-32042, V2025_06_18));
        assert!(!may_emit(-32042, V2026_07_28));
        assert_eq!(code_for(-32042, V2026_07_28, URL), -32603);
    }

    // covers: elicitation-server-may-return-url-required-error
    #[test]
    fn url_elicitation_error_needs_the_capability() {
        assert_eq!(code_for(-32042, V2025_11_25, URL), -32042);
        assert_eq!(code_for(-32042, V2025_11_25, NONE), -32603);
        assert_eq!(code_for(-32042, V2025_06_18, URL), -32603);
    }

    #[test]
    fn modern_http_statuses() {
        for (code, status) in [(-32700, 400), (-32600, 400), (-32601, 404), (-32602, 400), (-32020, 400), (-32021, 400), (-32022, 400), (-32603, 200), (-32002, 200), (-1, 200)] {
            assert_eq!(http_status(code), status, "{code}");
        }
    }

    #[test]
    fn modern_codes() {
        for c in [-32020, -32021, -32022] {
            assert!(may_emit(c, V2026_07_28));
            assert!(!may_emit(c, V2025_11_25));
        }
        assert_eq!(code_for(-32022, V2025_06_18, NONE), -32602);
        assert_eq!(code_for(-32020, V2025_06_18, NONE), -32600);
        assert_eq!(
            ErrorCode::UnsupportedProtocolVersion.name(),
            "UnsupportedProtocolVersionError"
        );
    }

    // covers: errors-reserved-subrange-only-spec-codes, errors-legacy-subrange-no-new-codes, errors-new-codes-outside-jsonrpc-range
    #[test]
    fn reserved_subranges() {
        assert!(!may_emit(-32050, V2026_07_28));
        assert!(may_emit(-32050, V2025_11_25));
        assert!(!may_emit(-32001, V2026_07_28));
        assert_eq!(code_for(-32001, V2026_07_28, NONE), -32603);
        assert!(may_emit(-1, V2026_07_28));
        assert!(may_emit(1000, V2026_07_28));
    }

    #[test]
    fn table_is_consistent() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(c.code().into()), Some(c));
            for r in Revision::ALL {
                assert!(c.for_revision(r).may_emit(r), "{c:?} in {r}");
            }
        }
    }
}
