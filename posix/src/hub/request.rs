//! What travels with a client request through the hub, shared by the
//! pipeline (`router`, `stages`, `modern`) and the subsystems it drives
//! (`pending`, `relay`, `tasks`, `policy`, `upstream`, ...): the modern
//! revision served, a modern request's per-request context, and a refusal.
//! Plain types only: this module imports nothing of the hub, so every layer
//! may depend on it without an import circle.

use mcpx_core::error::ErrorCode;
use mcpx_core::meta;
use mcpx_core::revision::Revision;
use serde_json::Value;

/// The modern revision served.
pub(super) const MODERN: Revision = Revision::V2026_07_28;

/// The context of one modern client request, kept with it while it is in
/// flight (and while it is held for a retry).
#[derive(Clone, Debug)]
pub(super) struct ReqCtx {
    /// `io.modelcontextprotocol/clientCapabilities` of this request.
    pub caps: Value,
    /// Index in `LOG_LEVELS` of `io.modelcontextprotocol/logLevel`; `None`:
    /// no log notifications for this request.
    pub log_level: Option<usize>,
    /// The client's principal (bound into `requestState`).
    pub principal: Vec<u8>,
    /// The params bound into `requestState` (`Salient::canonical`).
    pub salient: Salient,
}

/// The params of a `tools/call`, `prompts/get` or `resources/read` as the
/// client wrote them (a copy of the bytes, read only when a `requestState`
/// is sealed or checked: `modern`), and whether it is a `resources/read`
/// (bound by its `uri`, the others by `name` and `arguments`); `None` for
/// any other method.
#[derive(Clone, Debug)]
pub(super) struct Salient(pub Option<(Vec<u8>, bool)>);

/// An error answer to a client request.
pub(super) struct Refusal(pub ErrorCode, pub String, pub Option<Value>);

/// Index of a log level name in `LOG_LEVELS`.
pub(super) fn level_index(name: &str) -> Option<usize> {
    meta::LOG_LEVELS.iter().position(|l| *l == name)
}
