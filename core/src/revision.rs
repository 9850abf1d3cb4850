//! MCP protocol revisions, their eras, legacy `initialize` version
//! negotiation, the one era classification of a client message, and the one
//! table of per-revision feature differences that egress shaping follows.

use crate::method::Method;

/// One MCP protocol revision. Ordered by date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// 2024-11-05
    V2024_11_05,
    /// 2025-03-26
    V2025_03_26,
    /// 2025-06-18
    V2025_06_18,
    /// 2025-11-25
    V2025_11_25,
    /// 2026-07-28
    V2026_07_28,
}

/// How a revision establishes version, capabilities and identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` handshake, session-scoped state (2025-11-25 and earlier).
    Legacy,
    /// Stateless, per-request `_meta` (2026-07-28 and later).
    Modern,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The newest revision that uses the `initialize` handshake.
    pub const LATEST_LEGACY: Revision = Revision::V2025_11_25;

    /// The newest revision.
    pub const LATEST: Revision = Revision::V2026_07_28;

    /// The version string used on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire version string; `None` for any unknown version.
    pub fn parse(s: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The era this revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            Revision::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether this revision has `feature`; see [`Feature`].
    pub fn supports(self, feature: Feature) -> bool {
        feature.revisions().contains(self)
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl core::fmt::Display for Revision {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of revisions (a bitset), e.g. those enabled by `--revisions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Revisions(u8);

impl Revisions {
    /// No revision.
    pub const EMPTY: Revisions = Revisions(0);
    /// Every revision.
    pub const ALL: Revisions = Revisions::range(Revision::V2024_11_05, Revision::V2026_07_28);
    /// The legacy-era revisions.
    pub const LEGACY: Revisions = Revisions::range(Revision::V2024_11_05, Revision::LATEST_LEGACY);
    /// The modern-era revisions.
    pub const MODERN: Revisions = Revisions::range(Revision::V2026_07_28, Revision::LATEST);

    /// The one-element set.
    pub const fn only(r: Revision) -> Revisions {
        Revisions(r.bit())
    }

    /// All revisions from `first` to `last`, inclusive.
    pub const fn range(first: Revision, last: Revision) -> Revisions {
        let mut bits = 0;
        let mut i = first as u8;
        while i <= last as u8 {
            bits |= 1 << i;
            i += 1;
        }
        Revisions(bits)
    }

    /// This set plus `r`.
    pub const fn with(self, r: Revision) -> Revisions {
        Revisions(self.0 | r.bit())
    }

    /// Revisions in both sets.
    pub const fn intersect(self, other: Revisions) -> Revisions {
        Revisions(self.0 & other.0)
    }

    /// Whether `r` is in the set.
    pub const fn contains(self, r: Revision) -> bool {
        self.0 & r.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members, oldest first.
    pub fn iter(self) -> impl DoubleEndedIterator<Item = Revision> + Clone {
        Revision::ALL.into_iter().filter(move |r| self.contains(*r))
    }

    /// The newest member.
    pub fn latest(self) -> Option<Revision> {
        self.iter().next_back()
    }
}

/// A version string that names no known revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownRevision;

impl Revisions {
    /// Parses a comma-separated list such as `2025-06-18,2026-07-28`
    /// (whitespace around items is ignored). An empty list is an error.
    pub fn parse_list(list: &str) -> Result<Revisions, UnknownRevision> {
        let set = list.split(',').try_fold(Revisions::EMPTY, |set, item| {
            Revision::parse(item.trim())
                .map(|r| set.with(r))
                .ok_or(UnknownRevision)
        })?;
        if set.is_empty() {
            Err(UnknownRevision)
        } else {
            Ok(set)
        }
    }
}

impl FromIterator<Revision> for Revisions {
    fn from_iter<I: IntoIterator<Item = Revision>>(iter: I) -> Self {
        iter.into_iter().fold(Revisions::EMPTY, Revisions::with)
    }
}

/// Server side of legacy `initialize` negotiation found no legacy revision to
/// offer: `supported` contains modern revisions only. Answer the `initialize`
/// with an error naming the supported versions (row
/// `versioning-modern-only-server-names-versions-to-initialize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoLegacyRevision;

/// Server side of `initialize`: the version to answer with.
///
/// Echoes `requested` when it is a supported legacy revision (row
/// `lifecycle-server-echoes-supported-version`); otherwise — unknown
/// versions, unsupported ones, and modern ones, which cannot be negotiated by
/// `initialize` — counter-offers the latest supported legacy revision (rows
/// `lifecycle-server-counteroffers-version`,
/// `lifecycle-server-counteroffers-latest`).
pub fn negotiate_server(
    requested: &str,
    supported: Revisions,
) -> Result<Revision, NoLegacyRevision> {
    let legacy = supported.intersect(Revisions::LEGACY);
    match Revision::parse(requested) {
        Some(r) if legacy.contains(r) => Ok(r),
        _ => legacy.latest().ok_or(NoLegacyRevision),
    }
}

/// Client side of `initialize`: the server answered with a version this
/// client does not support, so it must disconnect (row
/// `lifecycle-client-disconnects-on-unsupported-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnect;

/// Client side of `initialize`: accepts the server's `answered` version only
/// if it is a legacy revision in `supported`.
pub fn negotiate_client(answered: &str, supported: Revisions) -> Result<Revision, Disconnect> {
    match Revision::parse(answered) {
        Some(r) if supported.intersect(Revisions::LEGACY).contains(r) => Ok(r),
        _ => Err(Disconnect),
    }
}

/// What the transport and the connection know about a request's era,
/// beside the message itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EraHints<'h> {
    /// The request came within a legacy session (an HTTP `Mcp-Session-Id`).
    pub session: bool,
    /// The HTTP `MCP-Protocol-Version` header, if any.
    pub version_header: Option<&'h str>,
    /// The connection has spoken the modern era and never `initialize`d:
    /// its requests stay modern even when their `_meta` is missing (so they
    /// get the modern -32602 rather than legacy service).
    pub modern_connection: bool,
}

/// What [`request_era`] reads of the message itself. The envelope view
/// ([`crate::envelope::Envelope`]) implements it: revisions sit below the
/// view in core's layers, so the rule names the facts it needs rather than
/// the view's type.
pub trait EraSignals {
    /// The message is a request (not a notification or a response).
    fn is_request(&self) -> bool;
    /// It carries `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    fn carries_protocol_version(&self) -> bool;
    /// Its method, for a request or a notification.
    fn typed_method(&self) -> Option<Method<'_>>;
}

/// The era a client message is served in: the one classification every
/// transport and the hub use (2026-07-28 `basic/versioning`, "Backward
/// Compatibility with Initialization-Based Versions"). `msg` is `None` for
/// a batch (legacy only).
///
/// In order: a legacy session stays legacy; a request with
/// `_meta["io.modelcontextprotocol/protocolVersion"]` or a
/// `server/discover` probe is modern; then the HTTP version header decides
/// (a legacy revision: legacy; any other value: modern, so an unknown
/// version gets the modern -32022); then the connection's history.
pub fn request_era<M: EraSignals + ?Sized>(msg: Option<&M>, hints: EraHints<'_>) -> Era {
    if hints.session {
        return Era::Legacy;
    }
    let request = msg.filter(|m| m.is_request());
    let modern_meta = msg.is_some_and(|m| m.carries_protocol_version());
    if modern_meta || request.is_some_and(|m| m.typed_method() == Some(Method::ServerDiscover)) {
        return Era::Modern;
    }
    match hints.version_header {
        Some(h) if Revision::parse(h).is_some_and(|r| r.era() == Era::Legacy) => Era::Legacy,
        Some(_) => Era::Modern,
        None if request.is_some() && hints.modern_connection => Era::Modern,
        None => Era::Legacy,
    }
}

/// A protocol feature whose presence differs between revisions. The hub's
/// egress shaping is driven by [`Feature::revisions`], the one table below;
/// each row cites the schema definition it was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// JSON-RPC batches (`JSONRPCBatchRequest`/`JSONRPCBatchResponse`).
    Batch,
    /// `AudioContent` content blocks.
    AudioContent,
    /// `ToolAnnotations` on `Tool`.
    ToolAnnotations,
    /// `message` in `notifications/progress` params.
    ProgressMessage,
    /// The `completions` server capability.
    CompletionsCapability,
    /// `ResourceLink` content blocks.
    ResourceLink,
    /// `structuredContent` on `CallToolResult` and `outputSchema` on `Tool`.
    StructuredContent,
    /// `title` on `BaseMetadata`/`Implementation`.
    Title,
    /// Elicitation (`ElicitRequest`, `elicitation` capability).
    Elicitation,
    /// URL-mode elicitation (`ElicitRequestURLParams`, `mode`).
    ElicitationUrlMode,
    /// `icons` on tools, prompts, resources, implementations.
    Icons,
    /// Sampling with tools (`ToolUseContent`, `ToolResultContent`).
    SamplingTools,
    /// Tasks as part of the core protocol (`CreateTaskResult`, `tasks`
    /// capability); 2026-07-28 moves them to an extension.
    CoreTasks,
    /// `initialize` handshake, `ping`, `logging/setLevel`,
    /// `resources/subscribe`, and server-to-client JSON-RPC requests.
    LegacySession,
    /// `resultType` on every `Result`.
    ResultType,
    /// Multi-round-trip requests (`InputRequiredResult`, `requestState`).
    InputRequired,
    /// `subscriptions/listen` (`SubscriptionsListenRequest`).
    SubscriptionsListen,
    /// `server/discover` (`DiscoverRequest`).
    ServerDiscover,
    /// `_meta` on list items (`Tool`, `Resource`, `Prompt`), content blocks
    /// and resource contents.
    ItemMeta,
    /// `Annotations.lastModified`.
    LastModified,
    /// An error response may leave out `id` when the request's id could not
    /// be read (`JSONRPCErrorResponse.id` optional).
    ErrorIdOptional,
    /// Tool names may hold `.` (the tool-name rules, rows `tools-name-*`).
    DotInToolNames,
}

impl Feature {
    /// Every feature.
    pub const ALL: [Feature; 22] = [
        Feature::Batch,
        Feature::AudioContent,
        Feature::ToolAnnotations,
        Feature::ProgressMessage,
        Feature::CompletionsCapability,
        Feature::ResourceLink,
        Feature::StructuredContent,
        Feature::Title,
        Feature::Elicitation,
        Feature::ElicitationUrlMode,
        Feature::Icons,
        Feature::SamplingTools,
        Feature::CoreTasks,
        Feature::LegacySession,
        Feature::ResultType,
        Feature::InputRequired,
        Feature::SubscriptionsListen,
        Feature::ServerDiscover,
        Feature::ItemMeta,
        Feature::LastModified,
        Feature::ErrorIdOptional,
        Feature::DotInToolNames,
    ];

    /// The revisions that have this feature — the per-revision difference
    /// table. Comments name the schema evidence (definition names in each
    /// revision's `schema.json`).
    pub const fn revisions(self) -> Revisions {
        use Revision::*;
        match self {
            // `JSONRPCBatchRequest` only in 2025-03-26.
            Feature::Batch => Revisions::only(V2025_03_26),
            // `AudioContent` from 2025-03-26.
            Feature::AudioContent => Revisions::range(V2025_03_26, V2026_07_28),
            // `ToolAnnotations` from 2025-03-26.
            Feature::ToolAnnotations => Revisions::range(V2025_03_26, V2026_07_28),
            // `ProgressNotification` params `message` from 2025-03-26.
            Feature::ProgressMessage => Revisions::range(V2025_03_26, V2026_07_28),
            // `ServerCapabilities.completions` from 2025-03-26.
            Feature::CompletionsCapability => Revisions::range(V2025_03_26, V2026_07_28),
            // `ResourceLink` from 2025-06-18.
            Feature::ResourceLink => Revisions::range(V2025_06_18, V2026_07_28),
            // `CallToolResult.structuredContent`, `Tool.outputSchema` from 2025-06-18.
            Feature::StructuredContent => Revisions::range(V2025_06_18, V2026_07_28),
            // `BaseMetadata.title`, `Implementation.title` from 2025-06-18.
            Feature::Title => Revisions::range(V2025_06_18, V2026_07_28),
            // `ElicitRequest` from 2025-06-18 (an input request in 2026-07-28).
            Feature::Elicitation => Revisions::range(V2025_06_18, V2026_07_28),
            // `ElicitRequestURLParams` from 2025-11-25.
            Feature::ElicitationUrlMode => Revisions::range(V2025_11_25, V2026_07_28),
            // `Icon`/`icons` from 2025-11-25.
            Feature::Icons => Revisions::range(V2025_11_25, V2026_07_28),
            // `ToolUseContent`/`ToolResultContent` from 2025-11-25.
            Feature::SamplingTools => Revisions::range(V2025_11_25, V2026_07_28),
            // `CreateTaskResult`, `ClientCapabilities.tasks` only in 2025-11-25.
            Feature::CoreTasks => Revisions::only(V2025_11_25),
            // `InitializeRequest`, `PingRequest`, `SetLevelRequest`,
            // `SubscribeRequest` through 2025-11-25, absent in 2026-07-28.
            Feature::LegacySession => Revisions::LEGACY,
            // `Result.resultType` (required) only in 2026-07-28.
            Feature::ResultType => Revisions::MODERN,
            // `InputRequiredResult`, `requestState` only in 2026-07-28.
            Feature::InputRequired => Revisions::MODERN,
            // `SubscriptionsListenRequest` only in 2026-07-28.
            Feature::SubscriptionsListen => Revisions::MODERN,
            // `DiscoverRequest` only in 2026-07-28.
            Feature::ServerDiscover => Revisions::MODERN,
            // `Tool._meta` (and on the other items and blocks) from 2025-06-18.
            Feature::ItemMeta => Revisions::range(V2025_06_18, V2026_07_28),
            // `Annotations.lastModified` from 2025-06-18.
            Feature::LastModified => Revisions::range(V2025_06_18, V2026_07_28),
            // `JSONRPCErrorResponse` (its `id` not required) from 2025-11-25.
            Feature::ErrorIdOptional => Revisions::range(V2025_11_25, V2026_07_28),
            // Prose, not schema: "Tool Names" (server/tools) from 2025-11-25
            // lists A-Z a-z 0-9 _ - and `.`; earlier revisions set no rule, and
            // clients of them (LLM APIs behind them) take `[A-Za-z0-9_-]` only.
            Feature::DotInToolNames => Revisions::range(V2025_11_25, V2026_07_28),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Revision::*;

    #[test]
    fn strings_round_trip_and_order() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
        assert_eq!(Revision::parse("2025-11-26"), None);
        assert_eq!(Revision::parse(""), None);
        assert!(Revision::ALL
            .windows(2)
            .all(|w| w[0] < w[1] && w[0].as_str() < w[1].as_str()));
        assert_eq!(Revision::LATEST_LEGACY.era(), Era::Legacy);
        assert_eq!(V2026_07_28.era(), Era::Modern);
        assert_eq!(Revisions::LEGACY.iter().count(), 4);
        assert_eq!(Revisions::ALL.latest(), Some(V2026_07_28));
        assert_eq!(Revisions::EMPTY.latest(), None);
        assert_eq!(
            Revisions::parse_list(" 2026-07-28 ,2025-06-18"),
            Ok(Revisions::only(V2025_06_18).with(V2026_07_28))
        );
        assert_eq!(Revisions::parse_list("2025-06-18,"), Err(UnknownRevision));
        assert_eq!(Revisions::parse_list(""), Err(UnknownRevision));
        assert_eq!(
            [V2024_11_05, V2025_06_18]
                .into_iter()
                .collect::<Revisions>()
                .latest(),
            Some(V2025_06_18)
        );
    }

    // covers: lifecycle-server-echoes-supported-version, lifecycle-server-counteroffers-version, lifecycle-server-counteroffers-latest
    #[test]
    fn server_negotiation() {
        for r in Revisions::LEGACY.iter() {
            assert_eq!(negotiate_server(r.as_str(), Revisions::ALL), Ok(r));
        }
        assert_eq!(
            negotiate_server("2099-01-01", Revisions::ALL),
            Ok(V2025_11_25)
        );
        assert_eq!(
            negotiate_server("2026-07-28", Revisions::ALL),
            Ok(V2025_11_25)
        );
        let restricted = Revisions::only(V2025_03_26).with(V2025_06_18);
        assert_eq!(negotiate_server("2024-11-05", restricted), Ok(V2025_06_18));
        assert_eq!(
            negotiate_server("2025-11-25", Revisions::MODERN),
            Err(NoLegacyRevision)
        );
    }

    // covers: lifecycle-client-disconnects-on-unsupported-version
    #[test]
    fn client_negotiation() {
        assert_eq!(
            negotiate_client("2025-06-18", Revisions::ALL),
            Ok(V2025_06_18)
        );
        assert_eq!(
            negotiate_client("2024-11-05", Revisions::only(V2025_11_25)),
            Err(Disconnect)
        );
        assert_eq!(
            negotiate_client("1900-01-01", Revisions::ALL),
            Err(Disconnect)
        );
        assert_eq!(
            negotiate_client("2026-07-28", Revisions::ALL),
            Err(Disconnect)
        );
    }

    // covers: versioning-dual-era-server-selects-by-opening
    #[test]
    fn request_era_by_message_then_transport() {
        use crate::envelope::Envelope;
        let env = |s: &'static str| Envelope::parse(s.as_bytes()).unwrap();
        let era = |s: &'static str, hints| request_era(Some(&env(s)), hints);
        let none = EraHints::default();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        let modern = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let discover = r#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{}}"#;
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(era(init, none), Era::Legacy);
        assert_eq!(era(modern, none), Era::Modern);
        assert_eq!(era(discover, none), Era::Modern);
        assert_eq!(era(plain, none), Era::Legacy);
        assert_eq!(era(note, none), Era::Legacy);
        assert_eq!(era(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, none), Era::Legacy);
        // A session pins the legacy era, whatever the message says.
        let session = EraHints { session: true, ..none };
        assert_eq!(era(modern, session), Era::Legacy);
        // The HTTP version header: a legacy revision is legacy, anything else modern.
        let header = |h| EraHints { version_header: Some(h), ..none };
        assert_eq!(era(plain, header("2025-06-18")), Era::Legacy);
        assert_eq!(era(plain, header("2026-07-28")), Era::Modern);
        assert_eq!(era(plain, header("1999-01-01")), Era::Modern);
        let batch = None::<&Envelope<'_>>;
        assert_eq!(request_era(batch, header("2025-03-26")), Era::Legacy);
        assert_eq!(request_era(batch, none), Era::Legacy);
        // A modern connection's requests stay modern; its notifications do not decide.
        let conn = EraHints { modern_connection: true, ..none };
        assert_eq!(era(plain, conn), Era::Modern);
        assert_eq!(era(note, conn), Era::Legacy);
    }

    // covers: messages-batch-may-send-must-receive, messages-resulttype-required
    #[test]
    fn feature_table() {
        assert_eq!(
            Feature::Batch.revisions().iter().collect::<Revisions>(),
            Revisions::only(V2025_03_26)
        );
        assert!(!V2024_11_05.supports(Feature::AudioContent));
        assert!(V2025_03_26.supports(Feature::AudioContent));
        assert!(!V2025_03_26.supports(Feature::StructuredContent));
        assert!(V2025_06_18.supports(Feature::ResourceLink));
        assert!(!V2025_06_18.supports(Feature::Icons));
        assert!(V2025_11_25.supports(Feature::CoreTasks));
        assert!(!V2026_07_28.supports(Feature::CoreTasks));
        assert!(Revisions::ALL
            .iter()
            .all(|r| r.supports(Feature::ResultType) == (r.era() == Era::Modern)));
        assert!(Revisions::ALL
            .iter()
            .all(|r| r.supports(Feature::LegacySession) == (r.era() == Era::Legacy)));
        assert!(Feature::ALL.iter().all(|f| !f.revisions().is_empty()));
    }
}
