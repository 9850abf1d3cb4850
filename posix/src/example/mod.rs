//! `mcpx example-server`: a built-in MCP server on stdio (to be written).
pub fn main(_args: &[String]) -> i32 {
    eprintln!("example-server: not written yet");
    2
}
