//! What a principal is asked to open to authorize a `"perPrincipal"`
//! server for itself (`delegated`), as the transport's error carries it.

/// What the caller is asked to open: the URL-mode elicitation's fields.
// Requirement: elicitation-url-no-sensitive-user-info, elicitation-url-not-pre-authenticated (the URL names a flow, nothing more)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    /// The flow's id, the elicitation's `elicitationId`.
    pub id: String,
    /// mcpx's `/connect/ID` page.
    pub url: String,
    pub server: String,
    pub principal: String,
}

impl Ask {
    /// The elicitation's `message`.
    pub fn message(&self) -> String {
        format!("Server '{}' acts as each person: open this page to authorize it for you ({}), then try again.", self.server, self.principal)
    }
}
