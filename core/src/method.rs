//! The JSON-RPC methods MCP defines, as one typed table.
//!
//! [`Method::parse`] turns a message's `method` string into a variant once,
//! at ingress ([`crate::envelope::Envelope::call`]); everything after it
//! matches on the variant instead of comparing strings. A method no revision
//! defines is [`Method::Other`], carrying its (possibly escaped) string.

use crate::json::JsonStr;

/// An MCP method (requests and notifications of every revision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method<'a> {
    Initialize,
    Ping,
    ServerDiscover,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourcesTemplatesList,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    PromptsList,
    PromptsGet,
    CompletionComplete,
    LoggingSetLevel,
    SubscriptionsListen,
    SamplingCreateMessage,
    ElicitationCreate,
    RootsList,
    TasksGet,
    TasksResult,
    TasksList,
    TasksCancel,
    /// `tasks/update` (the 2026-07-28 tasks extension: input for a task).
    TasksUpdate,
    /// `notifications/initialized` (also the pre-release spelling `initialized`).
    Initialized,
    Cancelled,
    Progress,
    LogMessage,
    ToolsListChanged,
    ResourcesListChanged,
    PromptsListChanged,
    ResourcesUpdated,
    RootsListChanged,
    ElicitationComplete,
    SubscriptionsAcknowledged,
    TasksStatus,
    /// `notifications/tasks` (the 2026-07-28 tasks extension: a task's
    /// state on a listen stream).
    Tasks,
    /// A method no revision defines (or a vendor extension).
    Other(JsonStr<'a>),
}

/// Every known method with its wire name; the first entry of a variant is
/// its canonical name, later ones are accepted aliases.
const TABLE: [(&str, Method<'static>); 37] = {
    use Method::*;
    [
        ("initialize", Initialize),
        ("ping", Ping),
        ("server/discover", ServerDiscover),
        ("tools/list", ToolsList),
        ("tools/call", ToolsCall),
        ("resources/list", ResourcesList),
        ("resources/templates/list", ResourcesTemplatesList),
        ("resources/read", ResourcesRead),
        ("resources/subscribe", ResourcesSubscribe),
        ("resources/unsubscribe", ResourcesUnsubscribe),
        ("prompts/list", PromptsList),
        ("prompts/get", PromptsGet),
        ("completion/complete", CompletionComplete),
        ("logging/setLevel", LoggingSetLevel),
        ("subscriptions/listen", SubscriptionsListen),
        ("sampling/createMessage", SamplingCreateMessage),
        ("elicitation/create", ElicitationCreate),
        ("roots/list", RootsList),
        ("tasks/get", TasksGet),
        ("tasks/result", TasksResult),
        ("tasks/list", TasksList),
        ("tasks/cancel", TasksCancel),
        ("tasks/update", TasksUpdate),
        ("notifications/initialized", Initialized),
        ("initialized", Initialized),
        ("notifications/cancelled", Cancelled),
        ("notifications/progress", Progress),
        ("notifications/message", LogMessage),
        ("notifications/tools/list_changed", ToolsListChanged),
        ("notifications/resources/list_changed", ResourcesListChanged),
        ("notifications/prompts/list_changed", PromptsListChanged),
        ("notifications/resources/updated", ResourcesUpdated),
        ("notifications/roots/list_changed", RootsListChanged),
        ("notifications/elicitation/complete", ElicitationComplete),
        ("notifications/subscriptions/acknowledged", SubscriptionsAcknowledged),
        ("notifications/tasks/status", TasksStatus),
        ("notifications/tasks", Tasks),
    ]
};

impl<'a> Method<'a> {
    /// The variant for a method string (escape sequences decoded).
    pub fn parse(s: JsonStr<'a>) -> Method<'a> {
        let found = match s.as_str() {
            Some(plain) => TABLE.iter().find(|(name, _)| *name == plain),
            None => TABLE.iter().find(|(name, _)| s.eq_str(name)),
        };
        found.map_or(Method::Other(s), |(_, m)| *m)
    }

    /// The variant for a known method name; `None` for names outside the table.
    pub fn known(s: &str) -> Option<Method<'static>> {
        TABLE.iter().find(|(name, _)| *name == s).map(|(_, m)| *m)
    }

    /// The wire name: canonical for known methods, the sent string for
    /// [`Method::Other`] (`None` if that has escape sequences).
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Method::Other(s) => s.as_str(),
            known => known.name(),
        }
    }

    /// The canonical wire name of a known method; `None` for [`Method::Other`].
    pub fn name(&self) -> Option<&'static str> {
        TABLE.iter().find(|(_, m)| m == self).map(|(name, _)| *name)
    }

    /// Whether this is the notification spelling of a list change
    /// (`notifications/*/list_changed`) or a resource update: the messages a
    /// server sends unasked.
    pub fn is_unsolicited(&self) -> bool {
        use Method::*;
        matches!(
            self,
            ToolsListChanged
                | ResourcesListChanged
                | PromptsListChanged
                | RootsListChanged
                | ResourcesUpdated
        )
    }
}

/// The wire name, for messages: canonical for known methods; an unknown
/// one as sent (escape sequences, if any, left as they are).
impl core::fmt::Display for Method<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = match self {
            Method::Other(s) => core::str::from_utf8(s.raw()).unwrap_or_default(),
            known => known.name().unwrap_or_default(),
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn m(src: &str) -> Method<'_> {
        Method::parse(json::parse(src.as_bytes()).unwrap().as_str().unwrap())
    }

    #[test]
    fn every_name_parses_to_its_variant_and_back() {
        for (name, method) in TABLE {
            let quoted = format!("\"{name}\"");
            let parsed = m(&quoted);
            assert_eq!(parsed, method, "{name}");
            assert_eq!(Method::known(name), Some(method));
            // The canonical name is the variant's first entry.
            let canonical = TABLE.iter().find(|(_, v)| *v == method).unwrap().0;
            assert_eq!(parsed.as_str(), Some(canonical));
        }
        assert_eq!(m(r#""initialized""#).as_str(), Some("notifications/initialized"));
    }

    #[test]
    fn escapes_are_decoded_and_unknown_methods_kept() {
        assert_eq!(m(r#""tools\/call""#), Method::ToolsCall);
        assert_eq!(m(r#""to\u006fls/list""#), Method::ToolsList);
        let other = m(r#""x/frobnicate""#);
        assert!(matches!(other, Method::Other(_)));
        assert_eq!(other.as_str(), Some("x/frobnicate"));
        assert_eq!(m(r#""x\/y""#).as_str(), None);
        assert_eq!(other.name(), None);
        assert_eq!(format!("{} {}", Method::ToolsCall, m(r#""x\/y""#)), r"tools/call x\/y");
        assert_eq!(Method::known("tools/frobnicate"), None);
        assert!(Method::ResourcesUpdated.is_unsolicited() && !Method::Progress.is_unsolicited());
    }
}
