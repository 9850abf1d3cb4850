//! Tool search for large catalogs: instead of every tool, a principal with
//! `"toolSearch": true` is listed three meta-tools ([`meta_tools`]) — search
//! the catalog, describe one tool, call one tool — so its context stays
//! small however many tools are behind mcpx.
//!
//! [`Index`] ranks tools by BM25 over their name (weight 3), title (2) and
//! description (1). Words are split at non-alphanumerics and at camelCase
//! and snake_case boundaries, lower-cased, and a plural `s` is dropped (`-ies` → `-y`, `-sses` → `-ss`), so
//! `listOpenIssues`, `list_open_issues` and "open issue" share words.
//!
//! The hub builds one index per principal from the list that principal may
//! see (after [`super::catalog_acl`]) and answers the meta-tools itself; a
//! call through `mcpx_call_tool` goes through the same limits, validation
//! and audit as a direct call of the named tool.

use std::collections::HashMap;

use serde_json::{json, Value};

pub const SEARCH: &str = "mcpx_search_tools";
pub const DESCRIBE: &str = "mcpx_describe_tool";
pub const CALL: &str = "mcpx_call_tool";

/// Hits returned at most.
pub const MAX_LIMIT: usize = 50;
/// Bytes of a description indexed (the rest is ignored for ranking).
const MAX_INDEXED: usize = 4096;

/// The words of `s` (see the module doc).
pub fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in s.split(|c: char| !c.is_alphanumeric()).filter(|r| !r.is_empty()) {
        let cs: Vec<char> = run.chars().collect();
        let mut start = 0;
        for i in 1..cs.len() {
            let (p, c) = (cs[i - 1], cs[i]);
            let next_lower = cs.get(i + 1).is_some_and(|n| n.is_lowercase());
            // fooBar | HTTPServer (split before the S) | v2Api
            if c.is_uppercase() && (p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next_lower)) {
                out.push(stem(&cs[start..i]));
                start = i;
            }
        }
        out.push(stem(&cs[start..]));
    }
    out
}

fn stem(cs: &[char]) -> String {
    let w: String = cs.iter().flat_map(|c| c.to_lowercase()).collect();
    if w.len() > 4 && w.ends_with("ies") {
        format!("{}y", &w[..w.len() - 3])
    } else if w.ends_with("sses") {
        w[..w.len() - 2].to_string()
    } else if w.len() > 3 && w.ends_with('s') && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
        w[..w.len() - 1].to_string()
    } else {
        w
    }
}

struct Doc {
    tool: Value,
    /// Weighted length.
    len: f64,
}

/// A ranked match.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit<'a> {
    pub name: &'a str,
    pub score: f64,
}

/// A BM25 index over a list of MCP `Tool`s.
pub struct Index {
    docs: Vec<Doc>,
    /// word → (doc, weighted term frequency)
    postings: HashMap<String, Vec<(usize, f64)>>,
    avg_len: f64,
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

impl Index {
    /// Indexes `tools` (each with `name`, optional `title`, `description`).
    pub fn new(tools: &[Value]) -> Index {
        let mut docs = Vec::with_capacity(tools.len());
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
            let desc = field("description");
            let desc = &desc[..desc.char_indices().nth(MAX_INDEXED).map_or(desc.len(), |(j, _)| j)];
            let mut tf: HashMap<String, f64> = HashMap::new();
            let mut len = 0.0;
            for (text, weight) in [(field("name"), 3.0), (field("title"), 2.0), (desc, 1.0)] {
                for w in words(text) {
                    *tf.entry(w).or_default() += weight;
                    len += weight;
                }
            }
            for (w, f) in tf {
                postings.entry(w).or_default().push((i, f));
            }
            docs.push(Doc { tool: t.clone(), len });
        }
        let avg_len = if docs.is_empty() { 1.0 } else { docs.iter().map(|d| d.len).sum::<f64>() / docs.len() as f64 };
        Index { docs, postings, avg_len: avg_len.max(1.0) }
    }

    /// The best `k` tools for `query` (at most [`MAX_LIMIT`]), best first;
    /// equal scores by name.
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit<'_>> {
        let n = self.docs.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        let mut q = words(query);
        q.sort();
        q.dedup();
        for w in &q {
            let Some(list) = self.postings.get(w) else { continue };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(d, tf) in list {
                let norm = K1 * (1.0 - B + B * self.docs[d].len / self.avg_len);
                *scores.entry(d).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut hits: Vec<Hit<'_>> = scores.into_iter().map(|(d, score)| Hit { name: self.name(d), score }).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.name.cmp(b.name)));
        hits.truncate(k.min(MAX_LIMIT));
        hits
    }

    /// The full `Tool` of `name` (with its `inputSchema`).
    pub fn describe(&self, name: &str) -> Option<&Value> {
        self.docs.iter().map(|d| &d.tool).find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    }

    fn name(&self, d: usize) -> &str {
        self.docs[d].tool.get("name").and_then(Value::as_str).unwrap_or("")
    }

    /// A `tools/call` result for `hits`: names, titles and descriptions as
    /// `structuredContent` and as text.
    pub fn result(&self, hits: &[Hit<'_>]) -> Value {
        let tools: Vec<Value> = hits
            .iter()
            .filter_map(|h| self.describe(h.name))
            .map(|t| {
                let mut o = serde_json::Map::new();
                for k in ["name", "title", "description"] {
                    if let Some(v) = t.get(k) {
                        o.insert(k.into(), v.clone());
                    }
                }
                Value::Object(o)
            })
            .collect();
        let structured = json!({"tools": tools});
        json!({"content": [{"type": "text", "text": structured.to_string()}], "structuredContent": structured})
    }
}

/// The three meta-tools, as MCP `Tool` objects.
pub fn meta_tools() -> Value {
    json!([
        {
            "name": SEARCH,
            "title": "Search tools",
            "description": "Search the tools available through this server by keywords (names, titles and descriptions). \
                Returns the best matches; use mcpx_describe_tool for a tool's input schema, then mcpx_call_tool to call it.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords, e.g. \"create github issue\"."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10, "description": "Matches to return."}
                },
                "required": ["query"],
                "additionalProperties": false
            },
            "outputSchema": {
                "type": "object",
                "properties": {"tools": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"}
                }, "required": ["name"]}}},
                "required": ["tools"]
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        },
        {
            "name": DESCRIBE,
            "title": "Describe a tool",
            "description": "The full definition of one tool found with mcpx_search_tools: its description and input schema.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The tool's name as returned by mcpx_search_tools."}},
                "required": ["name"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        },
        {
            "name": CALL,
            "title": "Call a tool",
            "description": "Call one tool found with mcpx_search_tools, with arguments matching its input schema (see mcpx_describe_tool).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name."},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["name"],
                "additionalProperties": false
            }
        }
    ])
}

/// A call of a meta-tool, read from its `name` and `arguments`.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaCall<'a> {
    Search { query: &'a str, limit: usize },
    Describe { name: &'a str },
    /// Forward as a `tools/call` of `name` (absent arguments: `{}`).
    Call { name: &'a str, arguments: Option<&'a Value> },
}

impl<'a> MetaCall<'a> {
    /// `None` when `tool` is not a meta-tool; `Err` names the bad argument
    /// (answered as a tool error).
    pub fn parse(tool: &str, arguments: &'a Value) -> Option<Result<MetaCall<'a>, String>> {
        let s = |k: &str| arguments.get(k).and_then(Value::as_str).ok_or_else(|| format!("{tool}: \"{k}\" must be a string"));
        Some(match tool {
            SEARCH => s("query").and_then(|query| {
                let limit = match arguments.get("limit") {
                    None => Ok(10),
                    Some(v) => v
                        .as_u64()
                        .filter(|n| (1..=MAX_LIMIT as u64).contains(n))
                        .map(|n| n as usize)
                        .ok_or_else(|| format!("{tool}: \"limit\" must be a whole number from 1 to {MAX_LIMIT}")),
                };
                limit.map(|limit| MetaCall::Search { query, limit })
            }),
            DESCRIBE => s("name").map(|name| MetaCall::Describe { name }),
            CALL => s("name").and_then(|name| match arguments.get("arguments") {
                None => Ok(MetaCall::Call { name, arguments: None }),
                Some(a @ Value::Object(_)) => Ok(MetaCall::Call { name, arguments: Some(a) }),
                Some(_) => Err(format!("{tool}: \"arguments\" must be an object")),
            }),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_snake_camel_and_acronyms() {
        assert_eq!(words("list_open_issues"), ["list", "open", "issue"]);
        assert_eq!(words("listOpenIssues"), ["list", "open", "issue"]);
        assert_eq!(words("HTTPServerStatus"), ["http", "server", "status"]);
        assert_eq!(words("gh__getRepo v2API"), ["gh", "get", "repo", "v2", "api"]);
        assert_eq!(words("Queries, classes & files."), ["query", "class", "file"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    /// 500 tools of generated names and descriptions, and one with a word
    /// no other has.
    fn catalog() -> Vec<Value> {
        let verbs = ["get", "list", "create", "update", "delete"];
        let things = ["issue", "repo", "file", "user", "branch", "commit", "label", "milestone", "project", "team"];
        let mut tools = Vec::new();
        for i in 0..499 {
            let (v, t) = (verbs[i % 5], things[(i / 5) % 10]);
            tools.push(json!({
                "name": format!("srv{}__{v}_{t}_{i}", i / 50),
                "description": format!("{v} a {t} in the workspace number {i}"),
            }));
        }
        tools.push(json!({
            "name": "weather__forecast",
            "title": "Forecast",
            "description": "Hourly precipitation and temperature for a city",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}
        }));
        tools
    }

    #[test]
    fn a_word_of_a_description_finds_its_tool_among_500() {
        let tools = catalog();
        let ix = Index::new(&tools);
        let hits = ix.search("precipitation", 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].name, "weather__forecast");
        assert_eq!(ix.search("will it rain? precipitation tomorrow", 5)[0].name, "weather__forecast");
        assert_eq!(ix.describe("weather__forecast").unwrap()["inputSchema"]["properties"]["city"]["type"], "string");
        assert!(ix.describe("nope").is_none());
        assert!(ix.search("zzz", 5).is_empty());
    }

    #[test]
    fn ranking_prefers_rare_words_and_names() {
        let tools = vec![
            json!({"name": "fs__read_file", "description": "Read a file from disk"}),
            json!({"name": "fs__write_file", "description": "Write a file to disk"}),
            json!({"name": "gh__create_issue", "description": "Create an issue in a repository"}),
            json!({"name": "notes__add", "description": "Add a note; mentions an issue tracker once"}),
            json!({"name": "fs__stat", "description": "File metadata"}),
        ];
        let ix = Index::new(&tools);
        // "issue" in the name outranks "issue" in a description.
        let hits = ix.search("issue", 10);
        assert_eq!(hits.iter().map(|h| h.name).collect::<Vec<_>>(), ["gh__create_issue", "notes__add"]);
        assert!(hits[0].score > hits[1].score);
        // Both words beat one; the rarer word ("write") decides among the files.
        let hits = ix.search("write files", 10);
        assert_eq!(hits[0].name, "fs__write_file");
        assert_eq!(hits.len(), 3);
        // camelCase in a query matches snake_case names.
        assert_eq!(ix.search("readFile", 1)[0].name, "fs__read_file");
        // k is honoured.
        assert_eq!(ix.search("file", 2).len(), 2);
    }

    #[test]
    fn the_meta_tools_are_valid_tools_and_their_calls_parse() {
        let tools = meta_tools();
        let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, [SEARCH, DESCRIBE, CALL]);
        for t in tools.as_array().unwrap() {
            jsonschema::meta::validate(&t["inputSchema"]).unwrap();
            assert_eq!(t["inputSchema"]["type"], "object");
        }
        let a = json!({"query": "issue", "limit": 3});
        assert_eq!(MetaCall::parse(SEARCH, &a), Some(Ok(MetaCall::Search { query: "issue", limit: 3 })));
        assert_eq!(MetaCall::parse(SEARCH, &json!({"query": "x"})), Some(Ok(MetaCall::Search { query: "x", limit: 10 })));
        assert!(MetaCall::parse(SEARCH, &json!({"query": "x", "limit": 0})).unwrap().is_err());
        assert!(MetaCall::parse(SEARCH, &json!({})).unwrap().unwrap_err().contains("\"query\" must be a string"));
        let args = json!({"city": "Oslo"});
        let c = json!({"name": "weather__forecast", "arguments": args});
        assert_eq!(MetaCall::parse(CALL, &c), Some(Ok(MetaCall::Call { name: "weather__forecast", arguments: Some(&args) })));
        assert!(MetaCall::parse(CALL, &json!({"name": "x", "arguments": 1})).unwrap().is_err());
        assert_eq!(MetaCall::parse(DESCRIBE, &json!({"name": "x"})), Some(Ok(MetaCall::Describe { name: "x" })));
        assert_eq!(MetaCall::parse("gh__create_issue", &json!({})), None);

        let ix = Index::new(&catalog());
        let r = ix.result(&ix.search("precipitation", 3));
        assert_eq!(r["structuredContent"]["tools"][0], json!({"name": "weather__forecast", "title": "Forecast", "description": "Hourly precipitation and temperature for a city"}));
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, r["structuredContent"]);
    }
}
