//! JSON-RPC plumbing for the example server; its revisions are core's
//! ([`mcpx_core::revision`]), what each one has is core's [`Feature`] table.

use mcpx_core::error::ErrorCode;
use mcpx_core::revision::{Era, Revision};
use serde_json::{json, Map, Value};

#[cfg(doc)]
use mcpx_core::revision::Feature;

/// Modern era (2026-07-28 on): stateless, per-request `_meta`, no `initialize`.
pub fn is_modern(rev: Revision) -> bool {
    rev.era() == Era::Modern
}

/// The codes of core's error table the example server answers with.
const fn code(c: ErrorCode) -> i64 {
    c.code() as i64
}
pub const PARSE_ERROR: i64 = code(ErrorCode::ParseError);
pub const INVALID_REQUEST: i64 = code(ErrorCode::InvalidRequest);
pub const METHOD_NOT_FOUND: i64 = code(ErrorCode::MethodNotFound);
pub const INVALID_PARAMS: i64 = code(ErrorCode::InvalidParams);
pub const INTERNAL_ERROR: i64 = code(ErrorCode::InternalError);
/// 2026-07-28: the request needs a client capability it did not declare.
pub const MISSING_CAPABILITY: i64 = code(ErrorCode::MissingRequiredClientCapability);
/// 2026-07-28: the requested protocol version is not supported.
pub const UNSUPPORTED_VERSION: i64 = code(ErrorCode::UnsupportedProtocolVersion);
/// 2025-11-25 and earlier: the resource does not exist.
pub const RESOURCE_NOT_FOUND_LEGACY: i64 = code(ErrorCode::ResourceNotFound);

/// A JSON-RPC error object to be sent back.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))
    }
    pub fn to_value(&self) -> Value {
        let mut e = Map::new();
        e.insert("code".into(), self.code.into());
        e.insert("message".into(), self.message.clone().into());
        if let Some(d) = &self.data {
            e.insert("data".into(), d.clone());
        }
        Value::Object(e)
    }
}

pub type RpcResult = Result<Value, RpcError>;

pub fn response(id: &Value, result: RpcResult) -> Value {
    match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(e) => error_response(id, &e),
    }
}

pub fn error_response(id: &Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.to_value()})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// What one incoming JSON value is.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        result: RpcResult,
    },
    /// Not a valid JSON-RPC message; answer with this error (id may be null).
    Invalid {
        id: Value,
        error: RpcError,
    },
}

/// A valid JSON-RPC id: string or number (null is tolerated only in error responses).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

pub fn classify(msg: Value) -> Incoming {
    let Value::Object(mut obj) = msg else {
        return Incoming::Invalid {
            id: Value::Null,
            error: RpcError::new(INVALID_REQUEST, "a JSON-RPC message must be a JSON object"),
        };
    };
    let id = obj.remove("id");
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let id = id.filter(valid_id).unwrap_or(Value::Null);
        return Incoming::Invalid {
            id,
            error: RpcError::new(
                INVALID_REQUEST,
                "missing or wrong \"jsonrpc\": expected \"2.0\"",
            ),
        };
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            let params = match params {
                Value::Null => Value::Object(Map::new()),
                p @ Value::Object(_) => p,
                _ => {
                    return Incoming::Invalid {
                        id: id.filter(valid_id).unwrap_or(Value::Null),
                        error: RpcError::invalid_params("\"params\" must be an object"),
                    }
                }
            };
            match id {
                None => Incoming::Notification { method, params },
                Some(id) if valid_id(&id) => Incoming::Request { id, method, params },
                Some(_) => Incoming::Invalid {
                    id: Value::Null,
                    error: RpcError::new(INVALID_REQUEST, "\"id\" must be a string or a number"),
                },
            }
        }
        Some(_) => Incoming::Invalid {
            id: id.filter(valid_id).unwrap_or(Value::Null),
            error: RpcError::new(INVALID_REQUEST, "\"method\" must be a string"),
        },
        None => {
            let id = id.unwrap_or(Value::Null);
            if let Some(r) = obj.remove("result") {
                Incoming::Response { id, result: Ok(r) }
            } else if let Some(e) = obj.remove("error") {
                let code = e
                    .get("code")
                    .and_then(Value::as_i64)
                    .unwrap_or(INTERNAL_ERROR);
                let message = e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let data = e.get("data").cloned();
                Incoming::Response {
                    id,
                    result: Err(RpcError {
                        code,
                        message,
                        data,
                    }),
                }
            } else {
                Incoming::Invalid {
                    id: id.clone(),
                    error: RpcError::new(
                        INVALID_REQUEST,
                        "message has neither \"method\" nor \"result\"/\"error\"",
                    ),
                }
            }
        }
    }
}

/// Argument helpers for `params` objects.
pub fn require_str<'a>(v: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(RpcError::invalid_params(format!(
            "\"{key}\" must be a string"
        ))),
        None => Err(RpcError::invalid_params(format!(
            "missing required parameter \"{key}\""
        ))),
    }
}

/// 128 bits from the operating system's random source as 32 hex digits
/// (task and session ids: unguessable to other clients).
pub fn random_id() -> String {
    use nanorand::Rng;
    let mut b = [0u8; 16];
    nanorand::ChaCha20::new().fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Standard base64 (with padding), used for binary resource and image payloads.
pub fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    }
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for c in s.chunks(4) {
        if c.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, &b) in c.iter().enumerate() {
            n |= val(b)? << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if c.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if c.len() > 3 {
            out.push(n as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_roundtrip() {
        for s in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar"] {
            assert_eq!(base64_decode(&base64(s)).unwrap(), s);
        }
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
    }

    #[test]
    fn classify_kinds() {
        assert!(matches!(
            classify(json!({"jsonrpc":"2.0","id":1,"method":"ping"})),
            Incoming::Request { .. }
        ));
        assert!(matches!(
            classify(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            Incoming::Notification { .. }
        ));
        assert!(matches!(
            classify(json!({"jsonrpc":"2.0","id":1,"result":{}})),
            Incoming::Response { .. }
        ));
        assert!(matches!(classify(json!([1, 2])), Incoming::Invalid { .. }));
        assert!(matches!(
            classify(json!({"id":1,"method":"ping"})),
            Incoming::Invalid { .. }
        ));
        match classify(json!({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})) {
            Incoming::Invalid { id, error } => {
                assert_eq!(id, json!(1));
                assert_eq!(error.code, INVALID_PARAMS);
            }
            _ => panic!(),
        }
    }

    #[test]
    fn only_2026_07_28_is_modern() {
        let modern: Vec<Revision> = Revision::ALL.into_iter().filter(|r| is_modern(*r)).collect();
        assert_eq!(modern, [Revision::V2026_07_28]);
    }
}
