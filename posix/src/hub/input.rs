//! What the runtime tells the hub ([`Input`]), each with the time it
//! happened (`Hub::handle`); the hub's answers are [`super::Output`]s.

use mcpx_core::envelope::Envelope;

use super::{shared, ClientId, Next, Oversize, UpstreamId};

/// One thing that happened, for [`super::Hub::handle`]: the one way in.
pub enum Input<'a> {
    /// One framed message from a client (a request, notification or
    /// response): parsed by the hub, once. Invalid messages are answered.
    ClientMessage(ClientId, &'a [u8]),
    /// One message from a client that the transport has parsed already (an
    /// HTTP body, a batch element): the hub reads spans of this view and
    /// never parses the bytes again.
    ClientEnvelope(ClientId, &'a Envelope<'a>),
    /// The client sent a frame longer than the runtime accepts, which it
    /// skipped. The hub answers an invalid-request error naming the limit
    /// (with the request's id when the frame's first bytes hold it; a
    /// notification is not answered); the session goes on.
    ClientFrameTooLarge(ClientId, &'a Oversize<'a>),
    /// The client is gone: its in-flight requests are cancelled upstream,
    /// its subscriptions dropped, relayed requests to it answered with an
    /// error.
    ClientDisconnected(ClientId),
    /// Who the client is, for binding `requestState` tokens: any stable
    /// bytes (for HTTP a digest of the bearer token; stdio keeps the
    /// default, one constant per process). A retry may come on another
    /// connection of the same principal.
    ClientPrincipal(ClientId, &'a [u8]),
    /// The W3C trace context of the HTTP request whose messages come next
    /// from client `client` (its `traceparent` and `tracestate` headers),
    /// and the session they belong to (`Mcp-Session-Id`): the parent of
    /// their spans when they carry none in `_meta`; `hop`: they came from
    /// another replica over the internal hop, whose context (that
    /// replica's span) is the parent even when `_meta` has the client's.
    /// Given only while tracing is on (`Hub::trace`, `Trace::on`).
    #[cfg(feature = "traces")]
    ClientTrace { client: ClientId, traceparent: Option<&'a [u8]>, tracestate: Option<&'a [u8]>, session: Option<&'a str>, hop: bool },
    /// The transport decided the client speaks 2026-07-28 (an HTTP POST
    /// classified so by its `MCP-Protocol-Version` header, its `_meta` or
    /// its method): the hub serves its requests in that era, and does not
    /// decide again on fewer facts (`stages`: identify). A legacy era is
    /// decided by `initialize` alone.
    ClientModern(ClientId),
    /// The upstream process is up: the hub sends `initialize`.
    UpstreamStarted(UpstreamId),
    /// One framed message from an upstream (a stdout line, an HTTP body or
    /// event); `on`: the hub's request (its JSON-RPC id, raw JSON) on whose
    /// response stream it came, if any: a server request there belongs to
    /// that request's client, exactly.
    UpstreamMessage { up: UpstreamId, msg: &'a [u8], on: Option<&'a [u8]> },
    /// The upstream process is gone (`reason`: exit status or spawn error;
    /// `stderr_tail`: its last stderr lines, may be empty; `next`: what the
    /// restart loop does now). Requests in flight to it are answered with an
    /// error naming the server; its tools stay listed and calls to them are
    /// answered "restarting, retry in N s" (or "stopped" once given up).
    UpstreamExited { up: UpstreamId, reason: &'a str, stderr_tail: &'a str, next: Next },
    /// The runtime could not deliver `msg` (as given in `Output::ToUpstream`)
    /// to the upstream, e.g. its output queue is full (`why` says so). A
    /// client request in it is answered at once with an error naming the
    /// server and `why`, instead of waiting for its timeout.
    UpstreamRefused { up: UpstreamId, msg: &'a [u8], why: &'a str },
    /// The upstream wrote a message over its transport's cap, which the
    /// runtime skipped; `on` as for `UpstreamMessage`. If its edges show the
    /// request it answers (or show a reply without its id, on `on`'s
    /// stream), that request is answered now with an error naming the size
    /// and the limit; otherwise the limit is named in that request's
    /// timeout error.
    UpstreamTooLarge { up: UpstreamId, big: &'a Oversize<'a>, on: Option<&'a [u8]> },
    /// The upstream wrote something that is not a JSON-RPC message (a
    /// non-JSON stdout line). Logged; counted in status.
    UpstreamGarbage(UpstreamId, &'a str),
    /// Read the upstream's lists again (e.g. after it answered -32020, its
    /// tool annotations may have changed); clients are told if they changed.
    Relist(UpstreamId),
    /// Upstream `up` (a `"perPrincipal"` server's instance) cannot start
    /// until its principal authorizes at `ask`: the requests waiting for
    /// it are told so when it exits (`url_ask`).
    #[cfg(feature = "secrets")]
    AskedToAuthorize { up: UpstreamId, ask: super::UrlAsk },
    /// The browser came back from authorizing URL elicitation `id`.
    #[cfg(feature = "secrets")]
    Authorized(&'a str),
    /// The server is removed (a config reload; `why` is for the log and the
    /// errors): its requests in flight are answered with an error naming it
    /// and `why`, its tools, resources and prompts leave the catalog (clients
    /// are told), and nothing is sent to it any more. The runtime stops its
    /// process; reports about it are ignored from now on.
    UpstreamRemoved { up: UpstreamId, why: &'a str },
    /// The lists the server offered when it last ran (as
    /// `Hub::upstream_lists` gave them, from the runtime's caches): its
    /// tools are known at once. A lazy server sleeps until a request needs
    /// it; another one's requests wait for its first start (give the lists
    /// before starting it). Ignored once it was started. `hold`: clients'
    /// `initialize` still waits for it to come up (up to `startup_wait_ms`),
    /// as for a server whose lists are not known (lists kept by this mcpx,
    /// which a server that starts in time replaces before anyone sees them);
    /// else they are answered at once (another replica's).
    SeedLists { up: UpstreamId, lists: &'a serde_json::Value, hold: bool },
    /// The store's answer to `Output::Shared` with this ticket: the request
    /// parked for it goes on (or gets an error saying why not). An unknown
    /// or late ticket is ignored.
    SharedAnswered { ticket: u64, answer: shared::Answer },
    /// The runtime finished `Output::Forward` of the client's request
    /// `request`: `Ok` when the owner's answer was written to the client;
    /// `Err(why)` when no answer came (the owner is gone, unreachable,
    /// refused the hop): the client gets an error saying so.
    ForwardDone { client: ClientId, request: &'a [u8], result: Result<(), String> },
    /// Time passed: timeouts due now fire (see `Hub::next_deadline`).
    Tick,
    /// The server is shutting down: every open `subscriptions/listen`
    /// stream gets its graceful end (a result answering the listen
    /// request), and from now on new client requests are answered with an
    /// error at once; requests in flight go on (their answers, and the
    /// clients' own answers and notifications, still flow).
    Shutdown,
    /// The shutdown's grace period (`grace_ms`) is over: every client
    /// request still waiting on a server is answered with an error naming
    /// the server and cancelled upstream.
    AbandonRequests { grace_ms: u64 },
    /// What the runtime knows about the configuration (file, reloads, the
    /// last refused one), shown as `config` in `Hub::status`.
    ConfigStatus(serde_json::Value),
    /// Log one `debug` line per call, relayed sampling and elicitation
    /// request (the runtime turns it on while its log level is debug).
    CallLog(bool),
    /// An operator asked for server `u`'s restart (`mcpx restart`): the
    /// runtime restarts it at once, as no failure (its backoff starts over,
    /// one that gave up tries again).
    #[cfg(feature = "cli")]
    RestartAsked(UpstreamId),
    /// An HTTP listener serves the `/approvals` page (calls that need
    /// approval may wait for it).
    #[cfg(feature = "consent")]
    ApprovalPage(bool),
    /// A decision on waiting call `n` taken on the `/approvals` page by
    /// `who` (nothing happens unless `who` may see it there,
    /// `approvals::Approvals::visible`).
    #[cfg(feature = "consent")]
    ApprovalDecided { who: super::approvals::Decider<'a>, n: u64, approve: bool },
    /// The pin files as read (at start, and whenever they change on disk):
    /// the state folder's and the configured lock file (`None`: absent or
    /// unreadable). See `pins`.
    PinFiles { state: Option<&'a [u8]>, lock: Option<&'a [u8]> },
    /// An approver (`policy.approvals.approvers`; `who` as the transport
    /// bound it) accepts the pin changes `name` names on the status page
    /// (`pins::Pins::accept`); the outcome is logged, and `/status` shows it.
    #[cfg(feature = "consent")]
    PinAccepted { who: &'a [u8], name: &'a str },
}
