//! `"state"` and `"cluster"`: replicas sharing state (the hub side is
//! `crate::hub::shared`).

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::ctx::{type_name, Ctx, Object};
use crate::hub::shared::{valid_replica_id, MAX_REPLICA_LEN};
use crate::bytes::jsonpos::Path;

/// The `requestState` sealing key shared by replicas: 32 bytes. Its
/// `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKey(pub [u8; 32]);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(<secret>)")
    }
}

impl StateKey {
    /// 64 hex digits, or base64 (standard or URL-safe, padded or not) of
    /// 32 bytes; surrounding whitespace is ignored.
    pub fn parse(text: &str) -> Result<StateKey, String> {
        use base64::Engine as _;
        let t = text.trim();
        let hex = (t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| (0..32).map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap_or(0)).collect::<Vec<u8>>());
        let engines = [base64::engine::general_purpose::STANDARD, base64::engine::general_purpose::URL_SAFE];
        let b64 = || engines.iter().find_map(|e| e.decode(t).ok().or_else(|| e.decode(format!("{t}=")).ok()));
        match hex.or_else(b64).map(<[u8; 32]>::try_from) {
            Some(Ok(k)) => Ok(StateKey(k)),
            Some(Err(v)) => Err(format!("the key is {} bytes; it must be 32 (e.g. `openssl rand -hex 32`)", v.len())),
            None => Err("the key is neither 64 hex digits nor base64 of 32 bytes (e.g. `openssl rand -hex 32`)".to_string()),
        }
    }
}

/// `"state": {"url": "redis://HOST:PORT/DB", "keyFile": "PATH"}` and
/// `"cluster": {"replica": "r1", "peers": {"r2": "http://10.0.0.2:7402"}}`,
/// with the environment's `MCPX_STATE_URL`, `MCPX_STATE_KEY` (the key
/// itself, before `keyFile`) and `MCPX_REPLICA` (before `cluster.replica`).
/// All absent: one mcpx, state in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The shared store (Redis or Valkey).
    pub state_url: Option<String>,
    /// The sealing key every replica shares.
    pub state_key: Option<StateKey>,
    /// This replica's id; `Some` = in a cluster.
    pub replica: Option<String>,
    /// The other replicas: id and base URL of their internal hop.
    pub peers: Vec<(String, String)>,
}

impl ClusterSettings {
    /// What the hub needs of these settings.
    pub fn hub_options(&self) -> crate::hub::ClusterOptions {
        crate::hub::ClusterOptions {
            replica: self.replica.clone(),
            peers: self.peers.iter().map(|(id, _)| id.clone()).collect(),
            shared: self.state_url.is_some(),
            state_key: self.state_key.as_ref().map(|k| k.0),
            ..Default::default()
        }
    }
}

/// The environment variables that are settings of their own (not `${VAR}`
/// references of the config): unset, they mean "not configured".
pub const SETTING_VARS: [&str; 3] = ["MCPX_STATE_URL", "MCPX_STATE_KEY", "MCPX_REPLICA"];

/// `keeps_tokens`: a `"perPrincipal"` server keeps each person's tokens,
/// encrypted with the state key.
pub(super) fn parse_cluster(cx: &mut Ctx<'_>, top: &Path, obj: &Object, keeps_tokens: bool) -> ClusterSettings {
    let mut out = ClusterSettings::default();
    let env = |k: &str| (cx.env)(k).filter(|v| !v.trim().is_empty());
    let [env_url, env_key, env_replica] = SETTING_VARS.map(env);
    let key_file = parse_state(cx, top, obj, env_url, &mut out);
    let cluster = cx.block(&top.key("cluster"), obj.get("cluster"), r#"{"replica": "r1", "peers": {"r2": "http://127.0.0.1:7402"}}"#);
    if let Some(cl) = cluster {
        parse_replicas(cx, &top.key("cluster"), cl, &mut out);
    }
    if let Some(r) = env_replica {
        out.replica = Some(r);
    }
    // The key is read only when something shares state or keeps tokens:
    // otherwise MCPX_STATE_KEY means nothing to this mcpx.
    let key_given = env_key.is_some() || key_file.is_some();
    if out.state_url.is_some() || out.replica.is_some() || keeps_tokens {
        out.state_key = read_key(cx, &top.key("state"), env_key, key_file);
    }
    if keeps_tokens && !key_given {
        cx.err(&top.key("state"), "\"perPrincipal\" servers keep each person's tokens encrypted with the state key: set MCPX_STATE_KEY (64 hex digits, e.g. from `openssl rand -hex 32`) or \"state\": {\"keyFile\": PATH}");
    }
    check_replica(cx, &top.key("cluster"), &out, cluster.is_some());
    // One file for every replica: the peers may name this one too (MCPX_REPLICA says which it is).
    if let Some(r) = &out.replica {
        out.peers.retain(|(id, _)| id != r);
    }
    out
}

/// `"state"` (and `MCPX_STATE_URL` over its `"url"`) into `out`; the key
/// file it names.
fn parse_state(cx: &mut Ctx<'_>, top: &Path, obj: &Object, env_url: Option<String>, out: &mut ClusterSettings) -> Option<PathBuf> {
    let at = top.key("state");
    let mut key_file = None;
    if let Some(st) = cx.block(&at, obj.get("state"), r#"{"url": "redis://127.0.0.1:6379/0"}"#) {
        cx.unknown_keys(&at, st, &["url", "keyFile"]);
        out.state_url = st.get("url").and_then(|v| cx.string(&at.key("url"), v));
        key_file = st.get("keyFile").and_then(|v| cx.string(&at.key("keyFile"), v)).and_then(|s| cx.path(&at.key("keyFile"), &s));
    }
    if let Some(u) = env_url {
        out.state_url = Some(u);
    }
    if let Some(u) = &out.state_url {
        if !(u.starts_with("redis://") || u.starts_with("rediss://")) {
            cx.err(&at.key("url"), format!("{u:?} is not a Redis URL (redis://HOST:PORT/DB; from \"state.url\" or MCPX_STATE_URL)"));
        }
    }
    key_file
}

/// `"cluster": {"replica", "peers"}` into `out`.
fn parse_replicas(cx: &mut Ctx<'_>, at: &Path, cl: &Object, out: &mut ClusterSettings) {
    cx.unknown_keys(at, cl, &["replica", "peers"]);
    out.replica = cl.get("replica").and_then(|v| cx.string(&at.key("replica"), v));
    match cl.get("peers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(peers)) => {
            for (id, url) in peers {
                let pat = at.key("peers").key(id);
                let Some(url) = cx.string(&pat, url) else { continue };
                if !valid_replica_id(id) {
                    cx.err(&pat, format!("{id:?} is not a replica id (1 to {MAX_REPLICA_LEN} of A-Z a-z 0-9 _ -)"));
                } else if !(url.starts_with("http://") || url.starts_with("https://")) {
                    cx.err(&pat, format!("{url:?} is not an http:// or https:// URL of that replica's internal hop"));
                } else {
                    out.peers.push((id.clone(), url));
                }
            }
        }
        Some(other) => cx.err(&at.key("peers"), format!("expected an object of replica ids to URLs, found {}", type_name(other))),
    }
}

/// The sealing key: `MCPX_STATE_KEY`, else the key file (32 raw bytes, or
/// the key as text).
fn read_key(cx: &mut Ctx<'_>, at: &Path, env_key: Option<String>, key_file: Option<PathBuf>) -> Option<StateKey> {
    let parsed = match (env_key, key_file) {
        (Some(k), _) => StateKey::parse(&k).map_err(|why| (at.clone(), format!("MCPX_STATE_KEY: {why}"))),
        (None, Some(f)) => match crate::host::small_file::read(&f) {
            Ok(bytes) if bytes.len() == 32 => Ok(StateKey(bytes.try_into().unwrap_or([0; 32]))),
            Ok(bytes) => StateKey::parse(&String::from_utf8_lossy(&bytes))
                .map_err(|why| (at.key("keyFile"), format!("{}: {why}", f.display()))),
            Err(e) => Err((at.key("keyFile"), format!("cannot read {}: {e}", f.display()))),
        },
        (None, None) => return None,
    };
    parsed.map_err(|(at, why)| cx.err(&at, why)).ok()
}

/// A replica id needs a valid id, shared state and a key; a `"cluster"`
/// block needs a replica id.
fn check_replica(cx: &mut Ctx<'_>, at: &Path, out: &ClusterSettings, has_block: bool) {
    let Some(r) = &out.replica else {
        if has_block {
            cx.err(&at.key("replica"), "missing: this replica's id (or MCPX_REPLICA)");
        }
        return;
    };
    if !valid_replica_id(r) {
        cx.err(&at.key("replica"), format!("{r:?} is not a replica id (1 to {MAX_REPLICA_LEN} of A-Z a-z 0-9 _ -; from \"cluster.replica\" or MCPX_REPLICA)"));
    }
    if out.state_url.is_none() {
        cx.err(at, "replicas need shared state: set \"state\": {\"url\": \"redis://HOST:PORT/DB\"} (or MCPX_STATE_URL), or a requestState redeemed on one replica could be replayed on another");
    }
    if out.state_key.is_none() {
        cx.err(at, "replicas need one sealing key: set MCPX_STATE_KEY (64 hex digits) or \"state\": {\"keyFile\": PATH}, the same on every replica");
    }
}
