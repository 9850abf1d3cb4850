//! The bench's upstream: a minimal MCP server on stdio (newline-delimited
//! JSON-RPC) with one tool, `echo`, that returns its `text` argument. It
//! never builds a JSON value: it splices the request's raw `id` and `text`
//! bytes into a fixed answer, so a forwarded call costs it a scan and a copy
//! and the upstream is never what a benchmark measures. A second tool,
//! `hold`, never answers: calls left in flight.

use std::io::{BufRead, BufReader, BufWriter, Write};

use super::json::{member, str_inner};

const TOOLS: &[u8] = br#"{"tools":[{"name":"echo","description":"Returns its text argument.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"hold","description":"Never answers.","inputSchema":{"type":"object"}}]}"#;

/// Answers one message into `out`; returns false for messages that need no
/// answer (notifications, responses).
pub fn answer(msg: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(id) = member(msg, "id") else {
        return false;
    };
    let Some(method) = member(msg, "method").and_then(str_inner) else {
        return false;
    };
    let params = member(msg, "params").unwrap_or(b"{}");
    let name = member(params, "name").and_then(str_inner);
    if method == b"tools/call" && name == Some(b"hold") {
        return false;
    }
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    match method {
        b"tools/call" => {
            let text = member(params, "arguments").and_then(|a| member(a, "text"));
            match (name, text) {
                (Some(b"echo"), Some(text)) if text.first() == Some(&b'"') => {
                    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
                    out.extend_from_slice(text);
                    out.extend_from_slice(b"}]}}");
                }
                _ => out.extend_from_slice(
                    br#","error":{"code":-32602,"message":"unknown tool or missing text: call echo with {\"text\":\"...\"}"}}"#,
                ),
            }
        }
        b"initialize" => {
            let version = member(msg, "params")
                .and_then(|p| member(p, "protocolVersion"))
                .filter(|v| v.first() == Some(&b'"'))
                .unwrap_or(br#""2025-06-18""#);
            out.extend_from_slice(br#","result":{"protocolVersion":"#);
            out.extend_from_slice(version);
            out.extend_from_slice(
                br#","capabilities":{"tools":{}},"serverInfo":{"name":"mcpx-bench-echo","version":"0.1.0"}}}"#,
            );
        }
        b"tools/list" => {
            out.extend_from_slice(br#","result":"#);
            out.extend_from_slice(TOOLS);
            out.push(b'}');
        }
        b"ping" => out.extend_from_slice(br#","result":{}}"#),
        _ => out.extend_from_slice(br#","error":{"code":-32601,"message":"method not found"}}"#),
    }
    out.push(b'\n');
    true
}

/// Serves stdin/stdout until end of input. Flushes only when no further
/// input is already buffered, so pipelined requests share a write.
pub fn main(_args: &[String]) -> i32 {
    let stdin = std::io::stdin().lock();
    let mut input = BufReader::with_capacity(1 << 16, stdin);
    let mut output = BufWriter::with_capacity(1 << 17, super::sys::stdout_file());
    let mut line = Vec::with_capacity(1 << 16);
    let mut out = Vec::with_capacity(1 << 16);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        out.clear();
        if answer(&line, &mut out) && output.write_all(&out).is_err() {
            break;
        }
        if input.buffer().is_empty() && output.flush().is_err() {
            break;
        }
    }
    let _ = output.flush();
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_text_and_id() {
        let mut out = Vec::new();
        let req = br#"{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi \"x\""}}}"#;
        assert!(answer(req, &mut out));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], "a1");
        assert_eq!(v["result"]["content"][0]["text"], "hi \"x\"");
        out.clear();
        assert!(!answer(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            &mut out
        ));
        assert!(answer(
            br#"{"jsonrpc":"2.0","id":2,"method":"server/discover"}"#,
            &mut out
        ));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["error"]["code"], -32601);
        out.clear();
        assert!(answer(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            &mut out
        ));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["result"]["tools"][0]["name"], "echo");
        assert_eq!(v["result"]["tools"][1]["name"], "hold");
        out.clear();
        assert!(!answer(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hold","arguments":{}}}"#, &mut out));
        assert!(out.is_empty());
    }
}
