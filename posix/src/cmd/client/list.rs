//! `mcpx tools`, `mcpx resources`, `mcpx prompts`: the hub's catalog as a
//! table, or as JSON.

use serde_json::{json, Value};

use super::session::Session;
use super::Failure;

/// Longest description shown in a table cell.
const MAX_CELL: usize = 80;

fn has(s: &Session, capability: &str) -> bool {
    s.init.get("capabilities").and_then(|c| c.get(capability)).is_some()
}

pub async fn tools(s: &mut Session, as_json: bool) -> Result<(), Failure> {
    let tools = if has(s, "tools") { s.list_all("tools/list", "tools").await? } else { Vec::new() };
    for line in not_ready(&s.init) {
        eprintln!("{line}");
    }
    if as_json {
        return print_json(&json!(tools));
    }
    let rows = tools.iter().map(|t| vec![str_of(t, "name"), summary(t)]).collect();
    print_table(&["TOOL", "DESCRIPTION"], rows, "no tools")
}

/// Resources and resource templates.
pub async fn resources(s: &mut Session, as_json: bool) -> Result<(), Failure> {
    let (list, templates) = if has(s, "resources") {
        (s.list_all("resources/list", "resources").await?, s.list_all("resources/templates/list", "resourceTemplates").await?)
    } else {
        (Vec::new(), Vec::new())
    };
    if as_json {
        return print_json(&json!({"resources": list, "resourceTemplates": templates}));
    }
    let row = |r: &Value, uri: &str| vec![str_of(r, uri), str_of(r, "name"), str_of(r, "mimeType")];
    let rows = list.iter().map(|r| row(r, "uri")).chain(templates.iter().map(|r| row(r, "uriTemplate"))).collect();
    print_table(&["URI", "NAME", "TYPE"], rows, "no resources")
}

pub async fn prompts(s: &mut Session, as_json: bool) -> Result<(), Failure> {
    let list = if has(s, "prompts") { s.list_all("prompts/list", "prompts").await? } else { Vec::new() };
    if as_json {
        return print_json(&json!(list));
    }
    let rows = list.iter().map(|p| vec![str_of(p, "name"), prompt_args(p), summary(p)]).collect();
    print_table(&["PROMPT", "ARGUMENTS", "DESCRIPTION"], rows, "no prompts")
}

/// One line per server the hub says is not ready yet (in its `initialize`
/// answer): what it is doing, and whether its tools are in the list.
fn not_ready(init: &Value) -> Vec<String> {
    let servers = init.pointer(&format!("/_meta/{}", crate::hub::NOT_READY_META.replace('/', "~1"))).and_then(Value::as_array);
    let line = |v: &Value| {
        let tools = if v["toolsKnown"] == Value::Bool(true) { "tools as last listed" } else { "tools not known yet" };
        format!("{}: {} ({tools})", str_of(v, "server"), str_of(v, "state"))
    };
    servers.map(|a| a.iter().map(line).collect()).unwrap_or_default()
}

pub fn print_json(v: &Value) -> Result<(), Failure> {
    println!("{}", serde_json::to_string_pretty(v).expect("a Value serializes"));
    Ok(())
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The first line of the description (or the title), cut to fit a cell.
fn summary(v: &Value) -> String {
    let d = v.get("description").or_else(|| v.get("title")).and_then(Value::as_str).unwrap_or("");
    let line = d.lines().next().unwrap_or("").trim();
    if line.chars().count() > MAX_CELL {
        format!("{}…", line.chars().take(MAX_CELL - 1).collect::<String>())
    } else {
        line.to_string()
    }
}

/// `name, [optional]` of a prompt's arguments.
fn prompt_args(p: &Value) -> String {
    let args = p.get("arguments").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let names: Vec<String> = args
        .iter()
        .map(|a| {
            let n = str_of(a, "name");
            if a.get("required").and_then(Value::as_bool) == Some(true) {
                n
            } else {
                format!("[{n}]")
            }
        })
        .collect();
    names.join(", ")
}

fn print_table(headers: &[&str], rows: Vec<Vec<String>>, empty: &str) -> Result<(), Failure> {
    if rows.is_empty() {
        eprintln!("({empty})");
    } else {
        print!("{}", table(headers, &rows));
    }
    Ok(())
}

/// Left-aligned columns, two spaces apart; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_cells_are_cut() {
        let rows = vec![vec!["a".to_string(), "x".into()], vec!["long_name".into(), "".into()]];
        assert_eq!(table(&["TOOL", "DESCRIPTION"], &rows), "TOOL       DESCRIPTION\na          x\nlong_name\n");
        let long = json!({"description": format!("{}\nsecond line", "d".repeat(100))});
        assert_eq!(summary(&long).chars().count(), MAX_CELL);
        assert!(summary(&long).ends_with('…'));
        let p = json!({"arguments": [{"name": "a", "required": true}, {"name": "b"}]});
        assert_eq!(prompt_args(&p), "a, [b]");
    }

    #[test]
    fn servers_not_ready_are_named() {
        let init = json!({"_meta": {"mcpx/notReady": [
            {"server": "calc", "state": "starting", "toolsKnown": false},
            {"server": "web", "state": "restarting", "toolsKnown": true}]}});
        assert_eq!(not_ready(&init), ["calc: starting (tools not known yet)", "web: restarting (tools as last listed)"]);
        assert!(not_ready(&json!({"capabilities": {}})).is_empty());
    }
}
