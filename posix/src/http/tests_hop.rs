//! The internal hop between replicas over loopback: the route's refusals,
//! and a forward (cluster/forward.rs) served as the asserted principal's
//! modern request. Reuses the helpers of `tests`.

use super::*;
use crate::cluster::forward::{Hop, CONNECT_TIMEOUT};
use crate::cluster::hop_auth::{self, HopKey};

const KEY: [u8; 32] = [42; 32];

/// A replica "r2" (with a client token, which the hop does not use) that
/// accepts hops from "r1".
fn replica() -> TestServer {
    start(|c| {
        c.token = Some("client-token".into());
        c.hop = Some(cluster_hop::HopConfig::new(HopKey::derive(&KEY), vec!["r1".into()]));
    })
}

fn hop_post(addr: SocketAddr, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut hs = vec![ACCEPT, JSON];
    hs.extend_from_slice(headers);
    request(addr, "POST", hop_auth::PATH, &hs, body)
}

fn message(r: &Resp) -> String {
    r.json()["error"]["message"].as_str().unwrap_or("").to_string()
}

#[test]
fn unsigned_or_badly_signed_hops_are_refused_with_a_reason() {
    let t = replica();
    let body = serde_json::to_vec(&modern_body(json!(1), "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }), json!({}))).unwrap();
    let r = hop_post(t.addr, &[], &body);
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(message(&r).contains("internal hop"), "{}", r.text());
    // Signed under another cluster's key.
    let what = hop_auth::Signed {
        from: "r1",
        time_ms: hop_auth::unix_ms(),
        nonce: &[0; hop_auth::NONCE_LEN],
        principal: b"anonymous",
        route: hop_auth::Route::CONTINUATION,
        fields: &[],
        body: &body,
    };
    let signed = HopKey::derive(&[1; 32]).sign(&what);
    let hs: Vec<(&str, String)> = signed.iter().map(|(n, v)| (*n, String::from_utf8(v.clone()).unwrap())).collect();
    let hs: Vec<(&str, &str)> = hs.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let r = hop_post(t.addr, &hs, &body);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(message(&r).contains("MAC does not match"), "{}", r.text());
    // The client token is no way in either.
    let r = hop_post(t.addr, &[("Authorization", "Bearer client-token")], &body);
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(t.seen.lock().unwrap().iter().all(|m| m != "tools/call"), "nothing refused reached the upstream");
    // Outside a cluster the path is not served.
    let plain = start(|_| {});
    assert_eq!(hop_post(plain.addr, &[], &body).status, 404);
}

#[test]
fn a_forward_is_served_and_its_answer_passed_on() {
    let t = replica();
    let hop = Hop::new("r1", &KEY, &[("r2".into(), format!("http://{}", t.addr))]).unwrap();
    let msg = serde_json::to_vec(&modern_body(json!(7), "tools/call", json!({ "name": "echo", "arguments": { "text": "over the hop" } }), json!({}))).unwrap();
    let params = mcpx_core::envelope::Envelope::parse(&msg).unwrap().params();
    let headers = crate::hub::modern_headers("tools/call", params, &|_| None);
    let got = RefCell::new(Vec::new());
    let deliver = |m: Vec<u8>| {
        let v: Value = serde_json::from_slice(&m).unwrap();
        let response = v.get("id").is_some() && v.get("method").is_none();
        got.borrow_mut().push(v);
        response
    };
    let r = crate::process::reactor::block_on(hop.forward("r2", &msg, b"token:alice", &headers, &deliver));
    assert_eq!(r, Ok(()));
    let got = got.into_inner();
    let last = got.last().expect("the response");
    assert_eq!((last["id"].clone(), last["result"]["content"][0]["text"].clone()), (json!(7), json!("over the hop")), "{got:?}");
    assert!(t.seen.lock().unwrap().iter().any(|m| m == "tools/call"));
}

#[test]
fn a_forward_to_a_dead_or_unknown_replica_fails_fast() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let hop = Hop::new("r1", &KEY, &[("r3".into(), format!("http://127.0.0.1:{port}"))]).unwrap();
    let msg = serde_json::to_vec(&modern_body(json!(1), "tools/list", json!({}), json!({}))).unwrap();
    let t0 = Instant::now();
    let r = crate::process::reactor::block_on(hop.forward("r3", &msg, b"anonymous", &[], &|_| true));
    assert!(t0.elapsed() < CONNECT_TIMEOUT + Duration::from_millis(500), "took {:?}", t0.elapsed());
    assert!(r.as_ref().is_err_and(|e| e.contains("replica \"r3\" did not answer")), "{r:?}");
    let r = crate::process::reactor::block_on(hop.forward("r9", &msg, b"anonymous", &[], &|_| true));
    assert!(r.is_err_and(|e| e.contains("not among cluster.peers")));
}
