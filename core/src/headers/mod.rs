//! Request metadata headers of the 2026-07-28 Streamable HTTP transport.
//!
//! From that revision on, every POST mirrors selected body fields into HTTP
//! headers so that intermediaries can route without parsing the body:
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (from `params.name` or
//! `params.uri`) and one `Mcp-Param-{Name}` per tool parameter annotated with
//! `x-mcp-header` in the tool's `inputSchema`.
//!
//! This module is the whole codec and nothing else:
//! - [`encode_value`] / [`encode_param`] render a value as a header value, in
//!   plain form or in the Base64 sentinel form `=?base64?…?=` exactly when the
//!   spec requires it ([`needs_sentinel`]);
//! - [`HeaderValue`] validates and decodes a received value;
//! - [`check`] compares a received header with the body value and yields the
//!   `HeaderMismatch` (-32020) error on failure, including missing and
//!   unexpected headers;
//! - [`validate_input_schema`] enforces every `x-mcp-header` constraint on a
//!   tool's `inputSchema`.
//!
//! Callers hand in values already extracted from the JSON body
//! ([`ParamValue`]); only the schema validator reads JSON itself, because the
//! "statically reachable" rule is a property of the whole schema document and
//! should live in one place.

mod check;
mod number;
mod schema;
mod value;

pub use check::{check, name_source, HeaderMismatch, HeaderField, MismatchKind, NameSource};
pub use number::{parse_safe_integer, MAX_SAFE_INTEGER};
pub use schema::{validate_input_schema, Rule, SchemaError, MAX_ANNOTATIONS, MAX_SCHEMA_DEPTH};
pub use value::{
    encode_param, encode_value, encoded_len, needs_sentinel, param_header_name,
    param_header_suffix, DecodedBytes, EncodeError, HeaderValue, Overflow, ParamValue, ValueError,
};

/// Header carrying the protocol revision of the request (`_meta`'s
/// `io.modelcontextprotocol/protocolVersion`). Never sentinel-encoded.
pub const MCP_PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// Header mirroring the JSON-RPC `method`. Never sentinel-encoded.
pub const MCP_METHOD: &str = "Mcp-Method";
/// Header mirroring `params.name` (`tools/call`, `prompts/get`) or
/// `params.uri` (`resources/read`). May be sentinel-encoded.
pub const MCP_NAME: &str = "Mcp-Name";
/// Prefix of the header mirroring an `x-mcp-header` annotated tool parameter:
/// `Mcp-Param-{x-mcp-header value}`. May be sentinel-encoded.
pub const MCP_PARAM_PREFIX: &str = "Mcp-Param-";
/// Opening marker of a Base64-encoded header value (case-sensitive).
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// Closing marker of a Base64-encoded header value (case-sensitive).
pub const SENTINEL_SUFFIX: &str = "?=";
