//! Where a tool's `x-mcp-header` annotations point (2026-07-28): the one walk
//! shared by the listener, which checks `Mcp-Param-*` headers against the
//! body, and the remote transport, which writes them. The rules an annotation
//! must follow are checked once, in `mcpx_core::headers::validate_input_schema`,
//! before a tool is listed.

/// The `x-mcp-header` annotations of a tool's `inputSchema`: (header name,
/// path of the argument), reached through `properties` alone (the hub lists
/// no tool whose annotations break the rules).
pub fn annotations(schema: &serde_json::Value) -> Vec<(String, Vec<String>)> {
    fn walk(s: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        let Some(props) = s.get("properties").and_then(|p| p.as_object()) else { return };
        for (k, prop) in props {
            path.push(k.clone());
            if let Some(h) = prop.get("x-mcp-header").and_then(|h| h.as_str()) {
                out.push((h.to_string(), path.clone()));
            }
            walk(prop, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out
}
