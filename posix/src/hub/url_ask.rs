//! A request that waits for its principal to authorize a server in a
//! browser (a `"perPrincipal"` server's own tokens, feature `secrets`):
//! the server's instance for that principal could not start without them,
//! and its transport said where the principal goes ([`UrlAsk`],
//! `Input::AskedToAuthorize`). Each request waiting for it (parked for its
//! start, or in flight when its tokens went) is answered as its client can
//! take it ([`how`]; the hub writes the answer):
//!
//! - a 2026-07-28 client that declared URL elicitation: an input round
//!   asking a URL-mode `elicitation/create`, its `requestState` sealed to
//!   the call; the retry is routed anew (the instance starts with the
//!   tokens, or asks again);
//! - a 2025-11-25 client that declared it: `-32042` with the elicitation,
//!   and `notifications/elicitation/complete` once the browser came back
//!   (`Input::Authorized`), to that client only;
//! - any other: a tool error (or, for another method, an error) saying
//!   which page to open, and to call again after.

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::ClientId;

/// Where a principal authorizes a server: mcpx's own page for the flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlAsk {
    /// The elicitation's id (the flow's).
    pub id: String,
    pub url: String,
    pub message: String,
}

/// The `inputRequests` key of the hub's own URL elicitation.
pub(super) const INPUT_KEY: &str = "mcpx-authorize";
/// The URL elicitations told to legacy clients, for their completion
/// notice; the oldest are forgotten past this many.
const REMEMBERED: usize = 256;

/// How a client is asked to open the page.
#[derive(Debug, PartialEq)]
pub(super) enum Asked {
    /// An input round with this URL-mode `elicitation/create` params.
    Round(Value),
    /// `-32042` with this `data`.
    Required(Value),
    /// A tool's error result with this text.
    ToolError(String),
    /// An error with this message.
    Error(String),
}

/// How a client is asked `ask` for its request (`tool_call`: a
/// `tools/call`): `modern`, with the capabilities it declared (`caps`,
/// the request's own when modern), its revision knowing URL mode
/// (`url_mode`).
pub(super) fn how(ask: &UrlAsk, tool_call: bool, modern: bool, url_mode: bool, caps: &Value) -> Asked {
    let declared = caps.get("elicitation").and_then(|e| e.get("url")).is_some();
    if declared && modern {
        return Asked::Round(json!({ "mode": "url", "message": ask.message, "url": ask.url }));
    }
    // Requirement: elicitation-url-required-error-lists-elicitations, elicitation-url-required-error-url-mode-with-id, elicitation-server-may-return-url-required-error
    if declared && url_mode {
        return Asked::Required(json!({ "elicitations": [{ "mode": "url", "elicitationId": ask.id, "message": ask.message, "url": ask.url }] }));
    }
    let text = format!("{} Open {} in a browser signed in to this hub as yourself, authorize there, then make this call again.", ask.message, ask.url);
    if tool_call {
        Asked::ToolError(text)
    } else {
        Asked::Error(text)
    }
}

/// The URL elicitations told to legacy clients, by id, for the notice of
/// their completion.
#[derive(Default)]
pub(super) struct Told(VecDeque<(String, ClientId)>);

impl Told {
    pub(super) fn remember(&mut self, id: &str, c: ClientId) {
        if self.0.len() >= REMEMBERED {
            self.0.pop_front();
        }
        self.0.push_back((id.to_string(), c));
    }

    /// The clients told elicitation `id`, forgotten now.
    pub(super) fn take(&mut self, id: &str) -> Vec<ClientId> {
        let (done, rest): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.0).into_iter().partition(|(x, _)| x == id);
        self.0 = rest;
        done.into_iter().map(|(_, c)| c).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask() -> UrlAsk {
        UrlAsk { id: "f1".into(), url: "https://hub.example/connect/f1".into(), message: "Server 'gh' acts as each person.".into() }
    }

    // covers: elicitation-url-required-error-url-mode-with-id, elicitation-url-required-error-lists-elicitations, errors-do-not-emit-32002-and-32042
    #[test]
    fn each_client_is_asked_as_it_can_take_it() {
        let url = json!({ "elicitation": { "url": {} } });
        let form = json!({ "elicitation": {} });
        let a = ask();
        // 2026-07-28 with URL mode: an input round, no -32042 and no id.
        assert_eq!(how(&a, true, true, false, &url), Asked::Round(json!({ "mode": "url", "message": a.message, "url": a.url })));
        // 2025-11-25 with URL mode: -32042 with the id.
        let Asked::Required(d) = how(&a, true, false, true, &url) else { panic!() };
        assert_eq!(d["elicitations"][0]["elicitationId"], "f1");
        assert_eq!(d["elicitations"][0]["mode"], "url");
        // Declared by an older revision, or form mode only, or a modern
        // client without it: told in words.
        for (modern, url_mode, caps) in [(false, false, &url), (false, true, &form), (true, false, &form), (false, true, &json!({}))] {
            let Asked::ToolError(t) = how(&a, true, modern, url_mode, caps) else { panic!("{modern} {url_mode} {caps}") };
            assert!(t.contains(&a.url) && t.contains("call again"), "{t}");
        }
        assert!(matches!(how(&a, false, false, false, &json!({})), Asked::Error(t) if t.contains(&a.url)));
    }

    #[test]
    fn a_completion_goes_to_the_clients_told_only_once() {
        let mut t = Told::default();
        t.remember("a", 1);
        t.remember("b", 2);
        t.remember("a", 3);
        assert_eq!(t.take("a"), vec![1, 3]);
        assert_eq!(t.take("a"), Vec::<ClientId>::new());
        assert_eq!(t.take("b"), vec![2]);
    }
}
