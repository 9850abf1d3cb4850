//! Header-versus-body validation (`HeaderMismatch`, -32020).

use core::fmt;

use super::number::parse_safe_integer;
use super::value::{bool_text, HeaderValue, ParamValue, ValueError};
use super::{MCP_METHOD, MCP_NAME, MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION};

/// The request metadata header a check concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderField<'a> {
    /// `MCP-Protocol-Version`, against `_meta`'s protocol version. Plain only.
    ProtocolVersion,
    /// `Mcp-Method`, against `method`. Plain only.
    Method,
    /// `Mcp-Name`, against `params.name` or `params.uri` (see
    /// [`name_source`]). Sentinel permitted.
    Name,
    /// `Mcp-Param-{name}`, against the argument annotated
    /// `"x-mcp-header": name`. Sentinel permitted.
    Param(&'a str),
}

impl HeaderField<'_> {
    /// Only `Mcp-Name` and `Mcp-Param-*` permit (and so need decoding of)
    /// the `=?base64?…?=` form.
    fn allows_sentinel(&self) -> bool {
        matches!(self, HeaderField::Name | HeaderField::Param(_))
    }
}

impl fmt::Display for HeaderField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderField::ProtocolVersion => f.write_str(MCP_PROTOCOL_VERSION),
            HeaderField::Method => f.write_str(MCP_METHOD),
            HeaderField::Name => f.write_str(MCP_NAME),
            HeaderField::Param(name) => write!(f, "{MCP_PARAM_PREFIX}{name}"),
        }
    }
}

/// Body field mirrored by `Mcp-Name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameSource {
    /// `params.name`
    Name,
    /// `params.uri`
    Uri,
    /// `params.taskId` (the tasks extension's `tasks/get`, `tasks/update`,
    /// `tasks/cancel`)
    TaskId,
}

impl NameSource {
    /// The member of `params` that `Mcp-Name` mirrors.
    pub fn field(self) -> &'static str {
        match self {
            NameSource::Name => "name",
            NameSource::Uri => "uri",
            NameSource::TaskId => "taskId",
        }
    }
}

/// Which body field `Mcp-Name` mirrors for `method`, or `None` when the
/// method has no `Mcp-Name` header (row streamable-http-standard-headers-required).
pub fn name_source(method: &str) -> Option<NameSource> {
    match method {
        "tools/call" | "prompts/get" => Some(NameSource::Name),
        "resources/read" => Some(NameSource::Uri),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some(NameSource::TaskId),
        _ => None,
    }
}

/// What is wrong with a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchKind {
    /// The body has a value but the header is absent.
    Missing,
    /// The header is present but the body value is absent or `null`.
    Unexpected,
    /// The header value has invalid characters or bad Base64 / UTF-8.
    Malformed(ValueError),
    /// The body value is numeric but not an integer within ±(2^53−1), so it
    /// cannot be mirrored faithfully.
    NotSafeInteger,
    /// The (decoded) header value differs from the body value.
    Differs,
}

/// A failed header check: reject with HTTP 400 and a JSON-RPC error
/// [`HeaderMismatch::CODE`] whose message is this value's `Display`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderMismatch<'a> {
    /// The header concerned.
    pub field: HeaderField<'a>,
    /// What is wrong with it.
    pub kind: MismatchKind,
}

impl HeaderMismatch<'_> {
    /// JSON-RPC error code `HeaderMismatch`.
    pub const CODE: i32 = crate::error::ErrorCode::HeaderMismatch.code();
    /// HTTP status of the rejection.
    pub const HTTP_STATUS: u16 = 400;
}

impl fmt::Display for HeaderMismatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = self.field;
        match self.kind {
            MismatchKind::Missing => write!(f, "Header mismatch: required {field} header is missing"),
            MismatchKind::Unexpected => {
                write!(f, "Header mismatch: {field} header is present but the body has no value for it")
            }
            MismatchKind::Malformed(e) => write!(f, "Header mismatch: {field} header value {e}"),
            MismatchKind::NotSafeInteger => write!(
                f,
                "Header mismatch: body value for {field} is not an integer within the safe range"
            ),
            MismatchKind::Differs => {
                write!(f, "Header mismatch: {field} header value does not match the body value")
            }
        }
    }
}

/// Checks one received header against its body value.
///
/// `header` is the raw field value (`None` if the header is absent);
/// `body` is the body value (`None` if absent or `null`). The rules:
/// - both absent: fine (row streamable-http-server-validates-param-headers:
///   the server MUST NOT expect a header for a null or absent value);
/// - body value without header: [`MismatchKind::Missing`];
/// - header without body value: [`MismatchKind::Unexpected`];
/// - otherwise the header is validated and, for `Mcp-Name` and
///   `Mcp-Param-*`, decoded, then compared: strings byte for byte
///   (case-sensitive), booleans against `true`/`false`, numbers numerically
///   via [`parse_safe_integer`] (`042`, `42.0` and `42` are equal).
///
/// Unrecognized `Mcp-Param-*` headers (no matching `x-mcp-header`) are not
/// checked at all: don't call this for them. Call it for `Mcp-Name` only when
/// [`name_source`] returns `Some`, and for `MCP-Protocol-Version` only after
/// deciding whether a missing header means a legacy client.
pub fn check<'a>(
    field: HeaderField<'a>,
    header: Option<&[u8]>,
    body: Option<ParamValue<'_>>,
) -> Result<(), HeaderMismatch<'a>> {
    let fail = |kind| HeaderMismatch { field, kind };
    let (raw, body) = match (header, body) {
        (None, None) => return Ok(()),
        (None, Some(_)) => return Err(fail(MismatchKind::Missing)),
        (Some(_), None) => return Err(fail(MismatchKind::Unexpected)),
        (Some(raw), Some(body)) => (raw, body),
    };
    let value = if field.allows_sentinel() {
        HeaderValue::parse(raw)
    } else {
        HeaderValue::parse_plain(raw)
    }
    .map_err(|e| fail(MismatchKind::Malformed(e)))?;
    let same = match body {
        ParamValue::Str(s) => value.bytes().eq(s.bytes()),
        ParamValue::Bool(b) => value.bytes().eq(bool_text(b).bytes()),
        ParamValue::Int(_) | ParamValue::Number(_) => {
            let want = body.safe_integer().ok_or(fail(MismatchKind::NotSafeInteger))?;
            parse_safe_integer(value.bytes()) == Some(want)
        }
    };
    if same {
        Ok(())
    } else {
        Err(fail(MismatchKind::Differs))
    }
}
