//! Skills (`io.modelcontextprotocol/skills`, SEP-2640, final since
//! 2026-09-13) through the hub: many servers' skills behind one server.
//!
//! - **Identity.** A skill is its server and its URI. Server S's
//!   `skill://<path>` is shown as `skill://<S>/<path>` (`scoped`): one more
//!   prefix segment, so the last one is still the skill's name and two
//!   servers' same-named skills both appear, neither shadowing the other.
//!   The frontmatter and every file's bytes pass unchanged.
//! - **Methods.** `skills/list` walks the servers that declared the
//!   extension and that the principal may see (its catalog's grant of the
//!   server, as for resources), one server per page run, with mcpx's
//!   sealed cursor carrying the server and that server's own cursor.
//!   `skills/get` and `resources/directory/read` go to the URI's owner;
//!   a URI no skill server owns is -32602, as the extension requires.
//! - **Digests.** The manifests of the entries that pass (`skills/list`,
//!   `skills/get`) are kept per server. A `resources/read` of a listed
//!   file whose bytes differ in size or SHA-256 from the manifest is
//!   refused, logged and counted: a server does not change a file under
//!   a digest it published. The client refreshes the entry with
//!   `skills/get` (which updates the manifest), as the extension says.
//! - **Directories.** mcpx reads directories (`directoryRead`): at the
//!   server, when it reads them; else from the manifests kept of it (the
//!   files and directories under a skill's directory, as the manifest
//!   lists them; a `"dynamic"` skill has none: -32602).
//! - **Negotiation.** mcpx offers the extension, reading directories, when
//!   an upstream declares it.
//!
//! Without the `skills` feature (mcpx-edge's plain build) the methods are
//! unknown and `skill://` URIs are the catalog's like any other.

#[cfg(feature = "skills")]
pub(super) use on::*;
#[cfg(not(feature = "skills"))]
pub(super) use off::*;

#[cfg(feature = "skills")]
mod on {
    use std::collections::HashMap;

    use base64::Engine as _;
    use mcpx_core::cursor::{self, Cursor};
    use mcpx_core::names;
    use serde_json::{json, Map, Value};
    use sha2::{Digest, Sha256};

    use crate::bytes::hex::hex;

    use mcpx_core::json::JsonStr;
    use mcpx_core::method::Method;

    use super::super::catalog::Entry;
    use super::super::{apps, scoped, Level, UpstreamId};
    use mcpx_core::error::ErrorCode;

    /// The extension's identifier (`capabilities.extensions` key).
    pub(in crate::hub) const EXT: &str = "io.modelcontextprotocol/skills";

    /// The extension's methods, typed once (`Call::of`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(in crate::hub) enum Call {
        List,
        Get,
        DirectoryRead,
    }

    /// Files whose digests are kept per server: 32 skills of the
    /// extension's 512 files. A server listing more has the rest passed
    /// unverified.
    pub(in crate::hub) const FILES_PER_SERVER: usize = 16_384;
    /// mcpx's cursor's list number for `skills/list` (the catalog's lists
    /// are 0..4).
    const CURSOR_LIST: u8 = 8;

    impl Call {
        pub fn of(method: &str) -> Option<Call> {
            match method {
                "skills/list" => Some(Call::List),
                "skills/get" => Some(Call::Get),
                "resources/directory/read" => Some(Call::DirectoryRead),
                _ => None,
            }
        }

        /// Is its result stamped with `ttlMs` and `cacheScope` on the
        /// 2026-07-28 wire? The extension requires them of `skills/list`
        /// and `skills/get`; the TypeScript SDK's skills client requires
        /// them of a directory read too (the extension's text does not).
        pub fn cacheable(method: &str) -> bool {
            Call::of(method).is_some()
        }
    }

    /// `skills/list`, as the hub sends it.
    pub(in crate::hub) const LIST: Method<'static> = Method::Other(JsonStr::plain("skills/list"));

    /// The `_meta` key of a prompt that shows a skill to a client without
    /// the extension: the skill's URI as clients know it.
    pub(in crate::hub) const PROMPT_META: &str = "mcpx/skill";
    /// The `_meta` key of such a prompt holding the SHA-256 of the skill's
    /// frontmatter and manifest: the prompt's pin (`pins`) covers the
    /// skill's files, so a skill whose files change is a changed prompt.
    const CONTENT_META: &str = "mcpx/skillContent";

    /// Skill `entry` of server `server` as a prompt (for clients that do not
    /// speak the extension): named as the skill, described as the server's;
    /// `None` for an entry without a URI.
    pub(in crate::hub) fn as_prompt(entry: &Value, server: &str) -> Option<Value> {
        let uri = entry.get("uri")?.as_str()?;
        let fm = entry.get("frontmatter");
        let text = |k: &str| fm.and_then(|f| f.get(k)).and_then(Value::as_str);
        let name = text("name").or_else(|| uri.trim_end_matches("/SKILL.md").rsplit('/').next())?;
        let shown = scoped::expose(server, uri).unwrap_or_else(|| uri.to_string());
        Some(json!({
            "name": name,
            "description": format!("Skill of server '{server}': {}", text("description").unwrap_or("")),
            "_meta": { PROMPT_META: shown, CONTENT_META: content(entry) },
        }))
    }

    /// The SHA-256 of skill `entry`'s frontmatter and manifest (as its
    /// server wrote them): what its prompt's pin covers.
    fn content(entry: &Value) -> String {
        let v = serde_json::to_vec(&json!({ "frontmatter": entry.get("frontmatter"), "resources": entry.get("resources") })).unwrap_or_default();
        format!("sha256:{}", hex(&Sha256::digest(v)))
    }

    /// Is skill `entry` of `server` listed in the catalog's `prompts` with
    /// other contents (the hub's listing of it is older than the entry)?
    pub(in crate::hub) fn listed_otherwise(prompts: &[Entry], server: &str, entry: &Value) -> bool {
        let Some(p) = as_prompt(entry, server) else { return false };
        let shown = prompt_uri(&p);
        prompts.iter().filter(|e| prompt_uri(&e.item) == shown).any(|e| e.item.get("_meta") != p.get("_meta"))
    }

    /// The skill a prompt shows (its URI as clients know it), if it shows one.
    pub(in crate::hub) fn prompt_uri(item: &Value) -> Option<&str> {
        item.get("_meta")?.get(PROMPT_META)?.as_str()
    }

    /// Is `e` a prompt showing a skill?
    pub(in crate::hub) fn is_prompt(e: &Entry) -> bool {
        prompt_uri(&e.item).is_some()
    }

    /// Did client capabilities `caps` declare the extension (it lists skills
    /// itself: no skill is shown to it as a prompt)?
    pub(in crate::hub) fn client_declared(caps: &Value) -> bool {
        declared(Some(caps)).is_some()
    }

    /// What capabilities `caps` (a server's) declare: `None` without the
    /// extension, else whether it reads directories (`directoryRead`).
    pub(in crate::hub) fn declared(caps: Option<&Value>) -> Option<bool> {
        let settings = caps?.get("extensions")?.get(EXT).filter(|s| s.is_object())?;
        Some(settings.get("directoryRead") == Some(&Value::Bool(true)))
    }

    /// Offers the extension in `caps` when one of the upstreams' declarations
    /// (`declared`) has it, reading directories: those of a server that
    /// reads none are read from its manifests ([`Skills::directory`]).
    pub(in crate::hub) fn offer(caps: &mut Map<String, Value>, mut declared: impl Iterator<Item = Option<bool>>) {
        if declared.any(|d| d.is_some()) {
            apps::add_extension(caps, EXT, json!({ "directoryRead": true }));
        }
    }

    /// mcpx's `skills/list` cursor: the server `u` the next page comes from
    /// and that server's own cursor (`None`: its first page), sealed.
    pub(in crate::hub) fn seal(u: UpstreamId, up: Option<&str>, key: &[u8]) -> String {
        let c = Cursor { list: CURSOR_LIST, position: u as u32, generation: hash32(up) };
        let mut s = cursor::encode(&c, key).as_str().to_string();
        if let Some(up) = up {
            s.push('.');
            s.push_str(up);
        }
        s
    }

    /// A cursor of [`seal`]: `None` when it is not one (forged, another
    /// list's, or cut).
    pub(in crate::hub) fn open(s: &str, key: &[u8]) -> Option<(UpstreamId, Option<String>)> {
        let (sealed, up) = match s.split_at_checked(cursor::ENCODED_LEN)? {
            (sealed, "") => (sealed, None),
            (sealed, rest) => (sealed, Some(rest.strip_prefix('.')?)),
        };
        let c = cursor::decode(sealed, key).ok().filter(|c| c.list == CURSOR_LIST && c.generation == hash32(up))?;
        Some((c.position as UpstreamId, up.map(str::to_string)))
    }

    fn hash32(up: Option<&str>) -> u32 {
        up.map_or(0, |s| names::hash(&[b"c", s.as_bytes()]) as u32)
    }

    /// One file of a manifest: its size and SHA-256.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct File {
        size: u64,
        sha256: [u8; 32],
    }

    impl File {
        /// A `SkillResource`'s `digest` and `size`; `None` when malformed.
        fn of(entry: &Value) -> Option<File> {
            let hex = entry.get("digest")?.as_str()?.strip_prefix("sha256:")?;
            if hex.len() != 64 || hex.bytes().any(|b| !matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return None;
            }
            let mut sha256 = [0u8; 32];
            for (i, d) in sha256.iter_mut().enumerate() {
                *d = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
            }
            Some(File { size: entry.get("size")?.as_u64()?, sha256 })
        }

        fn of_bytes(b: &[u8]) -> File {
            File { size: b.len() as u64, sha256: Sha256::digest(b).into() }
        }

        fn shown(&self) -> String {
            format!("sha256:{} ({} bytes)", hex(&self.sha256), self.size)
        }
    }

    /// A Skills result as the client gets it, and the skills held back
    /// (their URIs as shown): changed since they were pinned.
    pub(in crate::hub) struct Answered {
        pub bytes: Vec<u8>,
        pub held: Vec<String>,
    }

    /// Why the hub does not serve a read's result: its message, logged at
    /// `level` (a warning: a digest mismatch, counted), its code and data.
    pub(in crate::hub) struct Refused {
        pub level: Level,
        pub code: ErrorCode,
        pub msg: String,
        pub data: Value,
    }

    /// A read whose bytes are not the manifest's.
    #[derive(Debug, PartialEq, Eq)]
    pub(in crate::hub) struct Mismatch {
        /// The file's URI, as the server names it.
        pub uri: String,
        pub published: String,
        pub served: String,
    }

    /// The manifests of the skills that passed, per server, and each
    /// skill as a prompt ([`as_prompt`], by the skill's directory: its
    /// `SKILL.md`'s URI without the name), for pinning to judge a file's
    /// skill.
    #[derive(Debug, Default)]
    pub(in crate::hub) struct Skills {
        files: HashMap<UpstreamId, HashMap<String, File>>,
        prompts: HashMap<UpstreamId, HashMap<String, Value>>,
    }

    impl Skills {
        /// A result `res` of upstream `u` to a Skills request (`call`), as
        /// the client gets it: URIs as it knows them, manifests kept, and
        /// for `skills/list` mcpx's cursor to the next page (`next`: the
        /// next server from one on whose skills the client may see;
        /// `key`: the cursors' key).
        ///
        /// The entries `held` says so of (an entry as its server wrote it)
        /// are held back: left out of a listing (a `skills/get` of one is
        /// the hub's to refuse), and named in `held` (URIs as shown).
        pub fn answer(&mut self, call: Call, u: UpstreamId, server: &str, next: impl FnOnce(UpstreamId) -> Option<UpstreamId>, key: &[u8], held: impl FnMut(&Value) -> bool, res: &[u8]) -> Option<Answered> {
            if call == Call::DirectoryRead {
                return directory_read(server, res).map(|bytes| Answered { bytes, held: Vec::new() });
            }
            let (mut v, up_next, held) = self.passed(call, u, server, held, res)?;
            if call == Call::List {
                let next = match up_next {
                    Some(s) => Some(seal(u, Some(&s), key)),
                    None => next(u + 1).map(|n| seal(n, None, key)),
                };
                if let (Some(n), Some(o)) = (next, v.as_object_mut()) {
                    o.insert("nextCursor".into(), Value::String(n));
                }
            }
            Some(Answered { bytes: serde_json::to_vec(&v).ok()?, held })
        }

        /// A `skills/list` (`call` List) or `skills/get` result `res` of
        /// server `server` (upstream `u`): the manifests of its entries
        /// kept, the result with its URIs as clients see them, and the
        /// server's `nextCursor`. `None` when it is no such result.
        fn passed(&mut self, call: Call, u: UpstreamId, server: &str, mut hold: impl FnMut(&Value) -> bool, res: &[u8]) -> Option<(Value, Option<String>, Vec<String>)> {
            let mut v: Value = serde_json::from_slice(res).ok()?;
            let next = v.as_object_mut()?.remove("nextCursor").and_then(|c| c.as_str().map(str::to_string));
            let entries: Vec<&mut Value> = match call {
                Call::List => v.get_mut("skills")?.as_array_mut()?.iter_mut().collect(),
                Call::Get => vec![v.get_mut("skill")?],
                Call::DirectoryRead => return None,
            };
            let (kept, prompts) = (self.files.entry(u).or_default(), self.prompts.entry(u).or_default());
            let mut held = Vec::new();
            for entry in entries {
                keep(kept, prompts, server, entry);
                let hold = hold(entry);
                show(entry, "uri", server);
                if let Some(Value::Array(files)) = entry.get_mut("resources") {
                    files.iter_mut().for_each(|f| show(f, "uri", server));
                }
                if hold {
                    held.push(entry.get("uri").and_then(Value::as_str).unwrap_or_default().to_string());
                }
            }
            if let Some(Value::Array(list)) = v.get_mut("skills") {
                list.retain(|e| !held.iter().any(|h| e.get("uri").and_then(Value::as_str) == Some(h)));
            }
            Some((v, next, held))
        }

        /// Is `v`, a `resources/read` result of upstream `u`, what the
        /// manifest published for each file of it that one lists?
        fn verify(&self, u: UpstreamId, v: &Value) -> Result<(), Mismatch> {
            let Some(kept) = self.files.get(&u).filter(|k| !k.is_empty()) else { return Ok(()) };
            for c in v.get("contents").and_then(Value::as_array).into_iter().flatten() {
                let Some((uri, published)) = c.get("uri").and_then(Value::as_str).and_then(|uri| kept.get(uri).map(|f| (uri, f))) else { continue };
                let served = match (c.get("text").and_then(Value::as_str), c.get("blob").and_then(Value::as_str)) {
                    (Some(t), _) => File::of_bytes(t.as_bytes()),
                    (None, Some(b)) => match base64::engine::general_purpose::STANDARD.decode(b) {
                        Ok(bytes) => File::of_bytes(&bytes),
                        Err(_) => File { size: 0, sha256: [0; 32] },
                    },
                    (None, None) => File { size: 0, sha256: [0; 32] },
                };
                // The extension: a size that differs is a digest mismatch.
                if served != *published {
                    return Err(Mismatch { uri: uri.to_string(), published: published.shown(), served: served.shown() });
                }
            }
            Ok(())
        }

        /// The `skills/list` entries of server `u` read with its prompts:
        /// their manifests kept.
        pub fn listed(&mut self, u: UpstreamId, server: &str, entries: &[Value]) {
            let (kept, prompts) = (self.files.entry(u).or_default(), self.prompts.entry(u).or_default());
            for e in entries {
                keep(kept, prompts, server, e);
            }
        }

        /// Why `res`, an answer of upstream `u` (server `server`) to a
        /// `resources/read` or (`kind.1`) to the read behind a skill shown
        /// as a prompt, is not served: for a `resources/read` (`kind.0`), a
        /// file of a skill `held` says is held back by pinning (given the
        /// skill as a prompt); for both, a file not as its manifest
        /// published (requirement skills-host-verify-digest: a gateway
        /// refuses what a host must not use).
        pub fn refused(&self, u: UpstreamId, server: &str, kind: (bool, bool), res: &[u8], held: impl Fn(&Value) -> bool) -> Option<Refused> {
            let kept = |m: Option<usize>| m.is_some_and(|n| n > 0);
            if !(kind.0 || kind.1) || !(kept(self.files.get(&u).map(HashMap::len)) || kept(self.prompts.get(&u).map(HashMap::len))) {
                return None;
            }
            // Parsed once, for both checks.
            let v: Value = serde_json::from_slice(res).ok()?;
            if let Some(file) = kind.0.then(|| self.held_file(u, &v, held)).flatten() {
                let uri = scoped::expose(server, &file).unwrap_or(file);
                let msg = format!("server '{server}': {uri} is a file of a skill that is not as it was pinned; held back until `mcpx pin accept` (see /status)");
                return Some(Refused { level: Level::Debug, code: ErrorCode::InvalidParams, msg, data: json!({ "server": server, "uri": uri }) });
            }
            let x = self.verify(u, &v).err()?;
            let uri = scoped::expose(server, &x.uri).unwrap_or(x.uri);
            let msg = format!("server '{server}' served {uri} with {} where its skill's manifest published {}: refused; call skills/get to refresh the skill", x.served, x.published);
            Some(Refused { level: Level::Warn, code: ErrorCode::InternalError, msg, data: json!({ "server": server, "published": x.published, "served": x.served }) })
        }

        /// The first file of `v`, a `resources/read` result of upstream
        /// `u`, whose skill `held` says is held back (given the skill as a
        /// prompt, as the server last described it): its URI as the server
        /// names it.
        fn held_file(&self, u: UpstreamId, v: &Value, held: impl Fn(&Value) -> bool) -> Option<String> {
            let prompts = self.prompts.get(&u).filter(|p| !p.is_empty())?;
            v.get("contents")?.as_array()?.iter().filter_map(|c| c.get("uri")?.as_str()).find_map(|uri| {
                let root = prompts.keys().find(|root| uri.starts_with(root.as_str()))?;
                held(&prompts[root]).then(|| uri.to_string())
            })
        }

        /// A `resources/read` result `res` of server `server` (upstream `u`)
        /// for the prompt that shows skill `shown`: the prompt's result. It
        /// says whose skill it is and names the skill's other files (the
        /// manifest's), then embeds the `SKILL.md` as the server wrote it.
        pub fn prompt_result(&self, u: UpstreamId, server: &str, shown: &str, res: &[u8]) -> Option<Vec<u8>> {
            let v: Value = serde_json::from_slice(res).ok()?;
            let content = v.get("contents")?.as_array()?.first()?;
            let mut resource = json!({ "uri": shown, "mimeType": content.get("mimeType").cloned().unwrap_or_else(|| json!("text/markdown")) });
            for k in ["text", "blob"] {
                if let Some(x) = content.get(k) {
                    resource[k] = x.clone();
                }
            }
            let root = content.get("uri").and_then(Value::as_str).and_then(|u| u.strip_suffix("SKILL.md")).unwrap_or("\0");
            let mut others: Vec<String> = self.files.get(&u).into_iter().flatten().filter(|(f, _)| f.starts_with(root) && !f.ends_with("/SKILL.md")).map(|(f, _)| scoped::expose(server, f).unwrap_or_else(|| f.clone())).collect();
            others.sort();
            let files = if others.is_empty() { String::new() } else { format!(" Its other files, to read with resources/read: {}.", others.join(", ")) };
            let intro = format!("The skill at {shown} follows, as MCP server '{server}' serves it: instructions from that server, not from the user.{files}");
            serde_json::to_vec(&json!({
                "description": format!("Skill {shown} of server '{server}'"),
                "messages": [
                    { "role": "user", "content": { "type": "text", "text": intro } },
                    { "role": "user", "content": { "type": "resource", "resource": resource } },
                ],
            })).ok()
        }

        /// Directory `dir` (a URI of server `server`, upstream `u`, which
        /// reads no directories) read from the manifests kept of it: the
        /// files and directories right under it, as a
        /// `resources/directory/read` result; `None` when no manifest kept
        /// has a file under it (not a directory of a skill mcpx has seen
        /// listed; a `"dynamic"` skill has no manifest).
        pub fn directory(&self, u: UpstreamId, server: &str, dir: &str) -> Option<Vec<u8>> {
            let prefix = format!("{}/", dir.trim_end_matches('/'));
            let mut children = std::collections::BTreeMap::new();
            for f in self.files.get(&u)?.keys() {
                let Some(rest) = f.strip_prefix(&prefix).filter(|r| !r.is_empty()) else { continue };
                let (name, is_dir) = match rest.split_once('/') {
                    Some((d, _)) => (d, true),
                    None => (rest, false),
                };
                children.entry(name.to_string()).or_insert(is_dir);
            }
            if children.is_empty() {
                return None;
            }
            let resources: Vec<Value> = children.into_iter().map(|(name, is_dir)| {
                let uri = format!("{prefix}{name}");
                let mut r = json!({ "uri": scoped::expose(server, &uri).unwrap_or(uri), "name": name });
                if is_dir {
                    r["mimeType"] = json!("inode/directory");
                }
                r
            }).collect();
            serde_json::to_vec(&json!({ "resources": resources })).ok()
        }

        /// Server `u` is replaced or gone: its manifests with it.
        pub fn forget(&mut self, u: UpstreamId) {
            self.files.remove(&u);
            self.prompts.remove(&u);
        }
    }

    /// Keeps the manifest of skill `entry` of `server` (its `resources`
    /// array), in place of what was kept under its directory, and the
    /// skill as a prompt in `prompts` (as many as [`FILES_PER_SERVER`]); a
    /// `"dynamic"` skill's files are left unverified (the extension
    /// publishes no digests).
    fn keep(kept: &mut HashMap<String, File>, prompts: &mut HashMap<String, Value>, server: &str, entry: &Value) {
        let Some(root) = entry.get("uri").and_then(Value::as_str).and_then(|u| u.strip_suffix("SKILL.md")) else { return };
        if let Some(p) = as_prompt(entry, server).filter(|_| prompts.len() < FILES_PER_SERVER || prompts.contains_key(root)) {
            prompts.insert(root.to_string(), p);
        }
        kept.retain(|k, _| !k.starts_with(root));
        let Some(Value::Array(files)) = entry.get("resources") else { return };
        for f in files {
            let (Some(uri), Some(file)) = (f.get("uri").and_then(Value::as_str), File::of(f)) else { continue };
            // Each uri is the skill's SKILL.md or a file within its directory.
            if uri.starts_with(root) && (kept.len() < FILES_PER_SERVER || kept.contains_key(uri)) {
                kept.insert(uri.to_string(), file);
            }
        }
    }

    /// `v[key]`, a URI of `server`, as clients see it.
    fn show(v: &mut Value, key: &str, server: &str) {
        if let Some(Value::String(s)) = v.get_mut(key) {
            if let Some(e) = scoped::expose(server, s) {
                *s = e;
            }
        }
    }

    /// A `resources/directory/read` result of `server`, its children's
    /// URIs as clients see them.
    fn directory_read(server: &str, res: &[u8]) -> Option<Vec<u8>> {
        let mut v: Value = serde_json::from_slice(res).ok()?;
        for r in v.get_mut("resources")?.as_array_mut()? {
            show(r, "uri", server);
        }
        serde_json::to_vec(&v).ok()
    }
}

/// The same answers without the feature: no extension, no methods.
#[cfg(not(feature = "skills"))]
mod off {
    use serde_json::{Map, Value};

    use super::super::UpstreamId;

    /// No method is the extension's.
    pub(in crate::hub) enum Call {}

    impl Call {
        pub fn of(_: &str) -> Option<Call> {
            None
        }
        pub fn cacheable(_: &str) -> bool {
            false
        }
    }

    pub(in crate::hub) fn offer(_: &mut Map<String, Value>, _: impl Iterator<Item = Option<bool>>) {}
    pub(in crate::hub) fn declared(_: Option<&Value>) -> Option<bool> {
        None
    }

    #[derive(Debug, Default)]
    pub(in crate::hub) struct Skills;

    impl Skills {
        pub fn forget(&mut self, _: UpstreamId) {}
    }
}
