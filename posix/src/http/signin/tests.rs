//! The sign-in's rules as tables.

use super::rules::{credential, may_sign_in, next, refused, secure, to_signin, Credential, Refused};
use crate::http::auth::{denial, Reject};
use crate::http::decide::Target;

#[test]
fn the_cookie_opens_the_status_pages_only() {
    use Credential::{Cookie, Header};
    // (method, target, Authorization sent, taken by)
    #[cfg_attr(not(feature = "consent"), allow(unused_mut))]
    let mut table = vec![
        ("GET", Target::Status, false, Cookie),
        ("HEAD", Target::Status, false, Header),
        ("GET", Target::Status, true, Header),
        #[cfg(not(feature = "consent"))]
        ("POST", Target::Status, false, Header),
        ("POST", Target::Mcp, false, Header),
        ("GET", Target::Mcp, false, Header),
        ("DELETE", Target::Mcp, false, Header),
        ("GET", Target::Metrics, false, Header),
        ("GET", Target::Sse, false, Header),
        ("POST", Target::Messages, false, Header),
    ];
    #[cfg(feature = "consent")]
    table.extend([("POST", Target::Status, false, Cookie), ("POST", Target::Status, true, Header), ("GET", Target::Approvals, false, Cookie), ("POST", Target::Approvals, false, Header), ("GET", Target::Approval(1), false, Header)]);
    for (method, target, authorization, by) in table {
        assert_eq!(credential(method, target, authorization), by, "{method} {target:?} authorization={authorization}");
    }
}

#[test]
fn next_is_a_status_page_of_this_origin() {
    // (asked, where the sign-in leads)
    let table = [
        (Some("/status"), "/status"),
        (Some("/approvals"), "/approvals"),
        (None, "/status"),
        (Some(""), "/status"),
        (Some("//evil.example/status"), "/status"),
        (Some("http://evil.example/status"), "/status"),
        (Some("https://evil.example"), "/status"),
        (Some("/status/../mcp"), "/status"),
        (Some("/statusx"), "/status"),
        (Some("/mcp"), "/status"),
        (Some("/\\evil.example"), "/status"),
        (Some("/status?format=json"), "/status"),
    ];
    for (asked, to) in table {
        assert_eq!(next(asked), to, "{asked:?}");
    }
}

// A person's own authorization page: any principal signs in for it (the
// page checks the flow is theirs); its id is a plain word, nothing else.
#[cfg(feature = "secrets")]
#[test]
fn anyone_signs_in_for_their_authorization_page() {
    let table: [(Option<&str>, &str); 5] = [
        (Some("/connect/Ab-9_x"), "/connect/Ab-9_x"),
        (Some("/connect/../status"), "/status"),
        (Some("/connect/a?b=c"), "/status"),
        (Some("/connect/"), "/status"),
        (Some("//evil.example/connect/a"), "/status"),
    ];
    for (asked, to) in table {
        assert_eq!(next(asked), to, "{asked:?}");
    }
    assert!(may_sign_in(false, "/connect/Ab-9_x"));
    assert!(!may_sign_in(false, "/status") && !may_sign_in(false, "/approvals"));
    assert!(may_sign_in(true, "/status"));
}

#[test]
fn a_browser_refused_a_status_page_is_sent_to_the_form() {
    let unauthorized = Reject::Unauthorized { invalid: false, why: "x".into() };
    let throttled = Reject::Throttled { retry_after_s: 3, why: "x".into() };
    let unavailable = Reject::Unavailable("x".into());
    // (refusal, method, target, Authorization sent, prefers HTML, to the form)
    let table = [
        (&unauthorized, "GET", Target::Status, false, true, true),
        (&unauthorized, "GET", Target::Status, false, false, false),
        (&unauthorized, "GET", Target::Status, true, true, false),
        (&unauthorized, "POST", Target::Status, false, true, false),
        (&unauthorized, "GET", Target::Mcp, false, true, false),
        (&unauthorized, "GET", Target::Metrics, false, true, false),
        (&throttled, "GET", Target::Status, false, true, false),
        (&unavailable, "GET", Target::Status, false, true, false),
    ];
    for (r, method, target, authorization, html, sent) in table {
        assert_eq!(to_signin(r, method, target, authorization, html), sent, "{r:?} {method} {target:?} authorization={authorization} html={html}");
    }
}

#[test]
fn the_cookie_is_secure_behind_https() {
    let table = [(Some("https://hub.example.com"), true), (Some("HTTPS://hub.example.com"), true), (Some("http://127.0.0.1:8765"), false), (Some("null"), false), (Some("https://"), false), (None, false)];
    for (origin, is) in table {
        assert_eq!(secure(origin), is, "{origin:?}");
    }
}

#[test]
fn a_refused_token_gets_the_form_saying_why_and_when_to_retry() {
    let unauthorized = Reject::Unauthorized { invalid: true, why: "the bearer token is not valid".into() };
    let throttle = |s| Reject::Throttled { retry_after_s: s, why: "slow down".into() };
    let unavailable = Reject::Unavailable("no keys".into());
    let answer = |status, text: &str, retry: Option<&str>| Refused { status, text: text.into(), retry_after: retry.map(String::from) };
    // (refusal, the form's answer)
    let table = [
        (unauthorized, answer(401, "That token is not valid.", None)),
        (throttle(1), answer(429, "Too many tokens from this address were not valid: try again in 1s.", Some("1"))),
        (throttle(90), answer(429, "Too many tokens from this address were not valid: try again in 1m 30s.", Some("90"))),
        (unavailable, answer(503, "Service unavailable: no keys", None)),
    ];
    for (r, want) in table {
        assert_eq!(refused(&denial(&r, None)), want, "{r:?}");
    }
}
