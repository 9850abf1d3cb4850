//! The `_meta` keys MCP defines, in one place: below the envelope view,
//! which reads some of them at parse time, and below the validation of a
//! modern request's `_meta` ([`super::validate_request_meta`]).

/// The prefix of the `_meta` keys MCP reserves for a request's context
/// (the keys below but `progressToken`).
pub const RESERVED_PREFIX: &str = "io.modelcontextprotocol/";
/// `_meta` key: the request's protocol version (required).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (required).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (optional, should be sent).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: minimum log level for this request (optional).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server's name and version.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key correlating with a `subscriptions/listen` request.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key associating a message with a task (2025-11-25 tasks).
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key of a request opting in to progress notifications.
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";
