//! Pair tests of Skills (`io.modelcontextprotocol/skills`) through the hub:
//! two servers serving a skill of the same name at the same URI, listed
//! page by page across both, fetched, read against their digests, and
//! their directories read, by legacy and modern clients.

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::modern::with_meta;
use super::*;

const SKILLS: &str = "io.modelcontextprotocol/skills";
const URI: &str = "skill://git-workflow/SKILL.md";
const BODY: &str = "---\nname: git-workflow\ndescription: Branch and commit as this team does\n---\n\n# Git workflow\n\nSee references/GUIDE.md.\n";
const GUIDE: &str = "Rebase, never merge.\n";

fn digest(s: &str) -> String {
    let hex: String = Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A skills server (`dirs`: it reads directories).
fn docs(dirs: bool) -> Fake {
    let mut f = Fake::tools(&[]);
    f.caps = json!({ "resources": {}, "extensions": { SKILLS: { "directoryRead": dirs } } });
    f
}

/// The skill's entry with `body` as its SKILL.md.
fn entry(body: &str) -> Value {
    json!({
        "uri": URI,
        "frontmatter": { "name": "git-workflow", "description": "Branch and commit as this team does", "license": "MIT" },
        "resources": [
            { "uri": URI, "digest": digest(body), "size": body.len() },
            { "uri": "skill://git-workflow/references/GUIDE.md", "digest": digest(GUIDE), "size": GUIDE.len() }
        ]
    })
}

/// A hub over `fakes`, each skills server's own `skills/list` (read with
/// its prompts, to show them to clients without the extension) answered
/// with its entries in `entries` (by position).
fn hub(fakes: Vec<(&str, Fake)>, entries: &[Vec<Value>]) -> Pair {
    let skills: Vec<bool> = fakes.iter().map(|(_, f)| f.caps["extensions"].get(SKILLS).is_some()).collect();
    let mut p = Pair::with(fakes, HubOptions::default());
    for (u, serves) in skills.into_iter().enumerate() {
        if serves {
            let own = p.take_up(u);
            assert_eq!(own["method"], "skills/list", "{own}");
            p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": own["id"], "result": { "skills": entries.get(u).cloned().unwrap_or_default() } }));
        }
    }
    p
}

/// `m` of client `c` reaches upstream `u` (returned), answered with `result`; the client's answer.
fn through(p: &mut Pair, c: ClientId, u: UpstreamId, m: Value, result: Value) -> (Value, Value) {
    p.send(c, m);
    let up = p.take_up(u);
    p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": up["id"], "result": result }));
    (up, p.take(c))
}

fn req(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn read(uri: &str, text: &str) -> Value {
    json!({ "contents": [{ "uri": uri, "mimeType": "text/markdown", "text": text }] })
}

// covers: ext-skills-host-key-server-uri, ext-skills-names-no-shadow, ext-skills-list-pagination
// covers: ext-skills-server-implements-methods, ext-skills-server-declares-resources, ext-skills-skill-path-final-segment
// covers: ext-skills-frontmatter-identical, ext-skills-get-unknown-32602, ext-skills-get-unlisted, ext-skills-client-after-declaration
// covers: ext-skills-authority-no-resolution
#[test]
fn two_servers_same_named_skills_are_both_listed_page_by_page_and_neither_shadows() {
    let mut p = hub(vec![("docs", docs(true)), ("team", docs(false)), ("plain", Fake::tools(&["t"]))], &[]);
    let c = p.client("2025-11-25", json!({}));
    // Offered, reading directories (team's from its manifests).
    let fresh = p.connect();
    let init = p.request(fresh, json!(0), "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    assert_eq!(init["result"]["capabilities"]["extensions"][SKILLS], json!({ "directoryRead": true }), "{init}");
    assert!(init["result"]["capabilities"]["resources"].is_object(), "a server with skills declares resources: {init}");
    // Page 1: server docs, asked without a cursor.
    let (up, r) = through(&mut p, c, 0, req(1, "skills/list", json!({})), json!({ "skills": [entry(BODY)] }));
    assert_eq!(up["method"], "skills/list");
    assert!(up["params"].get("cursor").is_none(), "{up}");
    let s = &r["result"]["skills"][0];
    assert_eq!(s["uri"], "skill://docs/git-workflow/SKILL.md", "{r}");
    assert_eq!(s["frontmatter"], entry(BODY)["frontmatter"], "the frontmatter is the author's, verbatim");
    assert_eq!(s["resources"][1]["uri"], "skill://docs/git-workflow/references/GUIDE.md");
    assert_eq!(s["resources"][0]["digest"], digest(BODY), "digests and sizes pass as published");
    let next = r["result"]["nextCursor"].as_str().expect("a page follows: server team's").to_string();
    // Page 2: server team from its first page; it has more.
    let (up, r) = through(&mut p, c, 1, req(2, "skills/list", json!({ "cursor": next })), json!({ "skills": [entry(BODY)], "nextCursor": "team-2" }));
    assert!(up["params"].get("cursor").is_none(), "the next server starts at its first page: {up}");
    assert_eq!(r["result"]["skills"][0]["uri"], "skill://team/git-workflow/SKILL.md", "the same skill of another server: both listed, distinct");
    let next = r["result"]["nextCursor"].as_str().unwrap().to_string();
    assert_ne!(next, "team-2", "the server's cursor is mcpx's to carry");
    // Page 3: team's own cursor; the last page of the last skills server.
    let (up, r) = through(&mut p, c, 1, req(3, "skills/list", json!({ "cursor": next })), json!({ "skills": [] }));
    assert_eq!(up["params"]["cursor"], "team-2", "{up}");
    assert!(r["result"].get("nextCursor").is_none(), "{r}");
    // A forged or foreign cursor is -32602; so is a cut one.
    for bad in ["team-2", &format!("{next}x"), &next[..20]] {
        let r = p.request(c, json!(4), "skills/list", json!({ "cursor": bad }));
        assert_eq!(err_code(&r), -32602, "{bad}: {r}");
    }
    let tools_cursor = p.request(c, json!(5), "skills/list", json!({ "cursor": next.replace('.', "") }));
    assert_eq!(err_code(&tools_cursor), -32602, "{tools_cursor}");
    // skills/get goes to the skill's own server, by the server's URI.
    let (up, r) = through(&mut p, c, 1, req(6, "skills/get", json!({ "uri": "skill://team/git-workflow/SKILL.md" })), json!({ "skill": entry(BODY) }));
    assert_eq!(up["params"]["uri"], URI);
    assert_eq!(r["result"]["skill"]["uri"], "skill://team/git-workflow/SKILL.md", "{r}");
    // A skill no listing showed is fetched by its URI all the same.
    let (up, r) = through(&mut p, c, 0, req(8, "skills/get", json!({ "uri": "skill://docs/acme/billing/refunds/SKILL.md" })), json!({ "skill": { "uri": "skill://acme/billing/refunds/SKILL.md", "frontmatter": { "name": "refunds", "description": "d" }, "resources": "dynamic" } }));
    assert_eq!(up["params"]["uri"], "skill://acme/billing/refunds/SKILL.md");
    assert_eq!(r["result"]["skill"]["uri"], "skill://docs/acme/billing/refunds/SKILL.md", "{r}");
    assert_eq!(r["result"]["skill"]["resources"], "dynamic");
    // Only servers that declared the extension were asked.
    assert!(p.up_quiet(2));
    // The extension: a URI no skills server serves is -32602.
    for uri in [URI, "skill://nobody/git-workflow/SKILL.md", "skill://plain/x/SKILL.md"] {
        let r = p.request(c, json!(7), "skills/get", json!({ "uri": uri }));
        assert_eq!(err_code(&r), -32602, "{uri}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("No skill is served at"), "{r}");
    }
}

// covers: ext-skills-host-verify-digest
#[test]
fn a_file_changed_under_its_published_digest_is_refused_until_the_skill_is_fetched_again() {
    let mut p = hub(vec![("docs", docs(true))], &[]);
    let c = p.client("2025-06-18", json!({}));
    through(&mut p, c, 0, req(1, "skills/list", json!({})), json!({ "skills": [entry(BODY)] }));
    let shown = "skill://docs/git-workflow/SKILL.md";
    // As published: the read passes, under the URI the client knows.
    let (up, r) = through(&mut p, c, 0, req(2, "resources/read", json!({ "uri": shown })), read(URI, BODY));
    assert_eq!(up["params"]["uri"], URI);
    assert_eq!(r["result"]["contents"][0]["uri"], shown, "{r}");
    assert_eq!(r["result"]["contents"][0]["text"], BODY);
    // Changed under the same digest: refused, logged, counted.
    let changed = BODY.replace("Rebase", "Merge");
    let changed = changed.replace("references/GUIDE.md", "https://evil.example/run.sh");
    let (_, r) = through(&mut p, c, 0, req(3, "resources/read", json!({ "uri": shown })), read(URI, &changed));
    assert_eq!(err_code(&r), -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("skills/get") && msg.contains(&digest(BODY)), "{msg}");
    assert!(!r.to_string().contains("evil.example"), "nothing of the changed bytes reaches the client: {r}");
    assert!(p.logs.iter().any(|(l, m)| *l == Level::Warn && m.contains("server 'docs' served skill://docs/git-workflow/SKILL.md")), "{:?}", p.logs);
    let metrics = p.hub.metrics_text(1, 1).unwrap();
    assert!(metrics.contains("mcpx_skill_digest_mismatches_total{server=\"docs\"} 1"), "{metrics}");
    // A blob is checked on its decoded bytes; a size that differs is a mismatch too.
    let guide = "skill://docs/git-workflow/references/GUIDE.md";
    let blob = |s: &str| json!({ "contents": [{ "uri": "skill://git-workflow/references/GUIDE.md", "blob": base64::engine::general_purpose::STANDARD.encode(s) }] });
    let (_, r) = through(&mut p, c, 0, req(4, "resources/read", json!({ "uri": guide })), blob(GUIDE));
    assert!(r.get("result").is_some(), "{r}");
    let (_, r) = through(&mut p, c, 0, req(5, "resources/read", json!({ "uri": guide })), blob("Rebase, never merge!!\n"));
    assert_eq!(err_code(&r), -32603, "{r}");
    // The client refreshes the entry, as the extension says: the new digest holds.
    through(&mut p, c, 0, req(6, "skills/get", json!({ "uri": shown })), json!({ "skill": entry(&changed) }));
    let (_, r) = through(&mut p, c, 0, req(7, "resources/read", json!({ "uri": shown })), read(URI, &changed));
    assert_eq!(r["result"]["contents"][0]["text"], changed.as_str(), "{r}");
    // A file no manifest lists passes as any resource does.
    let (_, r) = through(&mut p, c, 0, req(8, "resources/read", json!({ "uri": "skill://docs/other/SKILL.md" })), read("skill://other/SKILL.md", "anything"));
    assert!(r.get("result").is_some(), "{r}");
}

// covers: ext-skills-directory-read-gated, ext-skills-directory-32602
#[test]
fn directories_are_read_at_servers_that_read_them_and_from_the_manifests_of_the_others() {
    let mut p = hub(vec![("docs", docs(true)), ("team", docs(false))], &[vec![], vec![entry(BODY)]]);
    let c = p.client("2025-11-25", json!({}));
    let children = json!({ "resources": [
        { "uri": "skill://git-workflow/references/GUIDE.md", "name": "GUIDE.md", "mimeType": "text/markdown" },
        { "uri": "skill://git-workflow/references/more", "name": "more", "mimeType": "inode/directory" }
    ], "nextCursor": "d2" });
    let (up, r) = through(&mut p, c, 0, req(1, "resources/directory/read", json!({ "uri": "skill://docs/git-workflow/references" })), children);
    assert_eq!(up["params"]["uri"], "skill://git-workflow/references");
    assert_eq!(r["result"]["resources"][0]["uri"], "skill://docs/git-workflow/references/GUIDE.md", "{r}");
    assert_eq!(r["result"]["resources"][1]["mimeType"], "inode/directory");
    assert_eq!(r["result"]["nextCursor"], "d2", "the directory's cursor is its server's");
    // Clients must not call it on a server without directoryRead: mcpx does
    // not, and reads the directory from the skill's manifest instead.
    let r = p.request(c, json!(2), "resources/directory/read", json!({ "uri": "skill://team/git-workflow" }));
    assert_eq!(r["result"]["resources"], json!([
        { "uri": "skill://team/git-workflow/SKILL.md", "name": "SKILL.md" },
        { "uri": "skill://team/git-workflow/references", "name": "references", "mimeType": "inode/directory" }
    ]), "{r}");
    let r = p.request(c, json!(3), "resources/directory/read", json!({ "uri": "skill://team/git-workflow/references" }));
    assert_eq!(r["result"]["resources"], json!([{ "uri": "skill://team/git-workflow/references/GUIDE.md", "name": "GUIDE.md" }]), "{r}");
    assert!(p.up_quiet(1));
    // Not a directory of a skill mcpx has seen (or a file), and no server's: -32602.
    for uri in ["skill://team/other", "skill://team/git-workflow/SKILL.md", "skill://nobody/git-workflow"] {
        let r = p.request(c, json!(4), "resources/directory/read", json!({ "uri": uri }));
        assert_eq!(err_code(&r), -32602, "{uri}: {r}");
    }
    assert!(p.up_quiet(1));
}

// covers: ext-skills-list-cacheable, ext-skills-result-type-complete
#[test]
fn modern_clients_list_and_get_skills_with_cache_hints_from_legacy_and_modern_servers() {
    let mut modern = docs(false);
    modern.rev = "2026-07-28";
    let mut p = hub(vec![("old", docs(false)), ("new", modern)], &[]);
    let c = p.connect();
    let caps = json!({});
    let discover = p.mreq(c, json!(0), "server/discover", json!({}), &caps);
    assert_eq!(discover["result"]["capabilities"]["extensions"][SKILLS], json!({ "directoryRead": true }), "{discover}");
    p.send(c, req(1, "skills/list", with_meta(json!({}), &caps)));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "skills": [entry(BODY)] } }));
    let r = p.take(c);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert!(r["result"]["ttlMs"].is_u64() && r["result"]["cacheScope"].is_string(), "the extension: ttlMs and cacheScope are required: {r}");
    let next = r["result"]["nextCursor"].as_str().unwrap().to_string();
    p.send(c, req(2, "skills/list", with_meta(json!({ "cursor": next }), &caps)));
    let up = p.take_up(1);
    assert!(up["params"].get("cursor").is_none(), "{up}");
    assert!(up["params"]["_meta"].is_object(), "a modern server gets the hub's request context: {up}");
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "skills": [entry(BODY)], "ttlMs": 300000, "cacheScope": "public" } }));
    let r = p.take(c);
    assert_eq!(r["result"]["skills"][0]["uri"], "skill://new/git-workflow/SKILL.md", "{r}");
    assert_eq!(r["result"]["ttlMs"], 300000, "the server's hint kept: {r}");
    assert_eq!(r["result"]["cacheScope"], "public");
    p.send(c, req(3, "skills/get", with_meta(json!({ "uri": "skill://old/git-workflow/SKILL.md" }), &caps)));
    let up = p.take_up(0);
    assert_eq!(up["params"]["uri"], URI);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "skill": entry(BODY) } }));
    let r = p.take(c);
    assert_eq!(r["result"]["skill"]["uri"], "skill://old/git-workflow/SKILL.md", "{r}");
    assert!(r["result"]["ttlMs"].is_u64(), "{r}");
}

#[test]
fn no_skills_server_no_extension_and_an_empty_list() {
    let mut p = hub(vec![("plain", Fake::tools(&["t"]))], &[]);
    let c = p.connect();
    let init = p.request(c, json!(0), "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    assert!(init["result"]["capabilities"].get("extensions").is_none(), "{init}");
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let r = p.request(c, json!(1), "skills/list", json!({}));
    assert_eq!(r["result"]["skills"], json!([]), "{r}");
    assert!(p.up_quiet(0));
}

/// A client that does not speak the extension: each skill is a prompt,
/// whose answer is the skill's SKILL.md, read from its server (checked
/// against its digest), saying whose it is and naming its other files.
#[test]
fn clients_without_the_extension_get_each_skill_as_a_prompt_of_its_server() {
    let mut with_prompts = docs(false);
    with_prompts.caps["prompts"] = json!({});
    with_prompts.prompts = vec![json!({ "name": "greet" })];
    let mut p = hub(vec![("docs", docs(true)), ("team", with_prompts)], &[vec![entry(BODY)], vec![entry(BODY)]]);
    for rev in ALL_REVS {
        let c = p.client(rev, json!({}));
        let prompts = p.list_all(c, "prompts/list", "prompts");
        let names: Vec<&str> = prompts.iter().map(|x| x["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["docs__git-workflow", "team__greet", "team__git-workflow"], "{rev}: the server's own prompts, then its skills");
        assert_eq!(prompts[0]["description"], "Skill of server 'docs': Branch and commit as this team does");
        if rev >= "2025-06-18" {
            assert_eq!(prompts[0]["_meta"]["mcpx/skill"], "skill://docs/git-workflow/SKILL.md", "{rev}");
        }
        // The prompt's answer: the SKILL.md of that server, read with its server's URI.
        let (up, r) = through(&mut p, c, 1, req(1, "prompts/get", json!({ "name": "team__git-workflow" })), read(URI, BODY));
        assert_eq!(up["method"], "resources/read", "{rev}: {up}");
        assert_eq!(up["params"]["uri"], URI);
        assert!(up["params"].get("name").is_none(), "{up}");
        let msgs = &r["result"]["messages"];
        let intro = msgs[0]["content"]["text"].as_str().unwrap();
        assert!(intro.contains("server 'team'") && intro.contains("skill://team/git-workflow/references/GUIDE.md"), "{rev}: origin and files named: {intro}");
        assert_eq!(msgs[1]["content"]["type"], "resource", "{r}");
        assert_eq!(msgs[1]["content"]["resource"]["uri"], "skill://team/git-workflow/SKILL.md");
        assert_eq!(msgs[1]["content"]["resource"]["text"], BODY, "the skill's bytes are its server's");
        // A SKILL.md changed under its digest is no prompt either.
        let (_, r) = through(&mut p, c, 0, req(2, "prompts/get", json!({ "name": "docs__git-workflow" })), read(URI, "---\nname: git-workflow\n---\nDo something else.\n"));
        assert_eq!(err_code(&r), -32603, "{rev}: {r}");
        // A prompt of the server's own is its own.
        let (up, _) = through(&mut p, c, 1, req(3, "prompts/get", json!({ "name": "team__greet" })), json!({ "messages": [] }));
        assert_eq!(up["method"], "prompts/get");
    }
    // A client that speaks the extension lists skills itself: no prompt shows one.
    let c = p.client("2025-11-25", json!({ "extensions": { SKILLS: {} } }));
    let prompts = p.list_all(c, "prompts/list", "prompts");
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["name"], "team__greet");
    let r = p.request(c, json!(4), "prompts/get", json!({ "name": "docs__git-workflow" }));
    assert_eq!(err_code(&r), -32602, "{r}");
}

#[test]
fn modern_clients_without_the_extension_get_skill_prompts_too() {
    let mut p = hub(vec![("docs", docs(false))], &[vec![entry(BODY)]]);
    let c = p.connect();
    let caps = json!({});
    let discover = p.mreq(c, json!(0), "server/discover", json!({}), &caps);
    assert!(discover["result"]["capabilities"]["prompts"].is_object(), "prompts offered for the skills: {discover}");
    let r = p.mreq(c, json!(1), "prompts/list", json!({}), &caps);
    assert_eq!(r["result"]["prompts"][0]["name"], "docs__git-workflow", "{r}");
    p.msend(c, json!(2), "prompts/get", json!({ "name": "docs__git-workflow" }), &caps);
    let up = p.take_up(0);
    assert_eq!(up["method"], "resources/read");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": read(URI, BODY) }));
    let r = p.take(c);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["messages"][1]["content"]["resource"]["text"], BODY, "{r}");
    let declared = json!({ "extensions": { SKILLS: {} } });
    let r = p.mreq(c, json!(3), "prompts/list", json!({}), &declared);
    assert_eq!(r["result"]["prompts"], json!([]), "declared in the request: no skill as a prompt: {r}");
}

/// A skill is pinned with its files (as its prompt): one whose files
/// changed since it was pinned is hidden until accepted, as a prompt and
/// from clients that speak the extension.
#[cfg(feature = "consent")]
#[test]
fn a_skill_whose_files_changed_since_it_was_pinned_is_held_back_until_accepted() {
    let mut p = Pair::with(vec![("docs", docs(false))], super::policy::with_policy(json!({ "pin": "hide" })));
    let own = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": own["id"], "result": { "skills": [entry(BODY)] } }));
    let c = p.client("2025-11-25", json!({}));
    let names = |p: &mut Pair| p.list_all(c, "prompts/list", "prompts").iter().map(|x| x["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&mut p), ["docs__git-workflow"]);
    // Read again (the server says its prompts changed): the same skill, one file changed.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/prompts/list_changed" }));
    let own = p.take_up(0);
    assert_eq!(own["method"], "skills/list");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": own["id"], "result": { "skills": [entry(&BODY.replace("# Git workflow", "# Git workflow\n\nPush to main."))] } }));
    assert_eq!(p.take(c)["method"], "notifications/prompts/list_changed");
    assert_eq!(names(&mut p), Vec::<String>::new());
    let r = p.request(c, json!(1), "prompts/get", json!({ "name": "docs__git-workflow" }));
    assert_eq!(err_code(&r), -32602, "{r}");
    assert!(p.up_quiet(0));
    assert!(p.logs.iter().any(|(_, l)| l.contains("prompt 'git-workflow' changed since it was pinned (_meta)")), "{:?}", p.logs);
    // A client that speaks the extension: held back from its listing, refused by skills/get.
    let changed = entry(&BODY.replace("# Git workflow", "# Git workflow\n\nPush to main."));
    let host = p.client("2025-11-25", json!({ "extensions": { SKILLS: {} } }));
    let (_, r) = through(&mut p, host, 0, req(2, "skills/list", json!({})), json!({ "skills": [changed.clone()] }));
    assert_eq!(r["result"]["skills"], json!([]), "{r}");
    let (_, r) = through(&mut p, host, 0, req(3, "skills/get", json!({ "uri": "skill://docs/git-workflow/SKILL.md" })), json!({ "skill": changed.clone() }));
    assert_eq!(err_code(&r), -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("not as it was pinned"), "{r}");
    // Nor are its files served, to a client that knows their URIs; another
    // server's file of the same path is its own.
    let pushed = BODY.replace("# Git workflow", "# Git workflow\n\nPush to main.");
    for c in [c, host] {
        let (_, r) = through(&mut p, c, 0, req(30, "resources/read", json!({ "uri": "skill://docs/git-workflow/SKILL.md" })), read(URI, &pushed));
        assert_eq!(err_code(&r), -32602, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("skill://docs/git-workflow/SKILL.md is a file of a skill that is not as it was pinned"), "{r}");
    }
    // The unchanged skill passes.
    let (_, r) = through(&mut p, host, 0, req(4, "skills/list", json!({})), json!({ "skills": [entry(BODY)] }));
    assert_eq!(r["result"]["skills"][0]["uri"], "skill://docs/git-workflow/SKILL.md", "{r}");
    // Accepted (`mcpx pin accept`): the new contents are the pin.
    let mut file = crate::hub::pins::PinFile::parse(p.pins_saved.last().unwrap()).unwrap();
    file.accept("git-workflow").unwrap();
    p.hub.handle(Input::PinFiles { state: Some(&file.to_bytes()), lock: None }, p.now);
    p.pump();
    assert_eq!(p.take(c)["method"], "notifications/prompts/list_changed", "its prompt is back");
    assert_eq!(names(&mut p), ["docs__git-workflow"]);
    let (_, r) = through(&mut p, host, 0, req(5, "skills/list", json!({})), json!({ "skills": [changed] }));
    assert_eq!(r["result"]["skills"][0]["uri"], "skill://docs/git-workflow/SKILL.md", "{r}");
    let (_, r) = through(&mut p, host, 0, req(6, "resources/read", json!({ "uri": "skill://docs/git-workflow/SKILL.md" })), read(URI, &pushed));
    assert_eq!(r["result"]["contents"][0]["text"], pushed.as_str(), "{r}");
}

/// A skill that changed since the hub last read it, met first in a client's
/// listing: held back, and the hub reads the server's skills again so that
/// the pins (and /status) have the change.
#[cfg(feature = "consent")]
#[test]
fn a_changed_skill_first_met_in_a_clients_listing_is_held_and_read_again_for_the_pins() {
    let mut p = Pair::with(vec![("docs", docs(false))], super::policy::with_policy(json!({ "pin": "hide" })));
    let own = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": own["id"], "result": { "skills": [entry(BODY)] } }));
    let host = p.client("2025-11-25", json!({ "extensions": { SKILLS: {} } }));
    let changed = entry(&BODY.replace("# Git workflow", "# Git workflow\n\nPush to main."));
    let (_, r) = through(&mut p, host, 0, req(1, "skills/list", json!({})), json!({ "skills": [changed.clone()] }));
    assert_eq!(r["result"]["skills"], json!([]), "{r}");
    let again = p.take_up(0);
    assert_eq!(again["method"], "skills/list", "read again: {again}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": again["id"], "result": { "skills": [changed] } }));
    assert!(p.logs.iter().any(|(l, m)| *l == Level::Warn && m.contains("prompt 'git-workflow' changed since it was pinned")), "{:?}", p.logs);
    assert_eq!(p.hub.status()["pins"]["changes"][0]["name"], "git-workflow");
    // Known to the pins now: the next listing holds it back without reading again.
    let (_, r) = through(&mut p, host, 0, req(2, "skills/list", json!({})), json!({ "skills": [entry(&BODY.replace("# Git workflow", "# Git workflow\n\nPush to main."))] }));
    assert_eq!(r["result"]["skills"], json!([]), "{r}");
    assert!(p.up_quiet(0));
}
